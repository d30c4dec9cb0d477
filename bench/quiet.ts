// Imported first by every bench entry, before any module makes a logger: components log at info
// to stderr, and a bench wants only warnings and errors (COTAL_LOG_LEVEL overrides).
process.env.COTAL_LOG_LEVEL ??= "warn";
