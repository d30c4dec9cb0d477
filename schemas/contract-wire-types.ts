import { controlWireTypes } from "./control-commands.js";
import { LaunchMaterial } from "./launch-material.js";

/** The control rail's commands (args and reply of each) and the launch material, for docs/schema/. */
export const CONTRACT_WIRE_TYPES = { ...controlWireTypes(), LaunchMaterial } as const;
