import { XFER_COMMANDS } from "./carry.js";
import { controlWireTypes } from "./control-commands.js";
import { LaunchMaterial } from "./launch-material.js";
import { MANAGER_COMMANDS } from "./manager-commands.js";

/** The control rail's commands (args and reply of each: mesh, manager and transcript transfer) and the launch material, for docs/schema/. */
export const CONTRACT_WIRE_TYPES = {
  ...controlWireTypes(),
  ...controlWireTypes(MANAGER_COMMANDS),
  ...controlWireTypes(XFER_COMMANDS),
  LaunchMaterial,
} as const;
