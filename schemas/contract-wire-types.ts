import { controlWireTypes } from "./control-commands.js";
import { LaunchMaterial } from "./launch-material.js";
import { MANAGER_COMMANDS } from "./manager-commands.js";

/** The control rail's commands (args and reply of each, mesh and manager) and the launch material, for docs/schema/. */
export const CONTRACT_WIRE_TYPES = { ...controlWireTypes(), ...controlWireTypes(MANAGER_COMMANDS), LaunchMaterial } as const;
