// Entry of the bundled hook command (dist/hook.mjs). A hook never blocks the session:
// until the relay exists it answers with an empty reply.
process.stdout.write("{}\n");
