/** What one vitest process ran: its counts and every file's duration (tests and hooks). */
export interface RunSummary {
  passed: number;
  failed: number;
  skipped: number;
  files: { name: string; ms: number }[];
}
export declare function closingLines(s: RunSummary): string;
