/**
 * The end of every remedy that changes what a host's manager sees (a CLI installed, a login, a
 * key exported): the command that restarts it, and why it must run from that shell. One text
 * for every runtime, so no remedy says "restart the manager" without saying how.
 */
export const RESTART_MANAGER = "then `cotal down && cotal up -d` from that shell (the host's manager takes its environment from the shell that starts it)";
