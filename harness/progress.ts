/**
 * Live progress lines: `[elapsed] row › step message`. Every failure line
 * names the log to read.
 */

const started = performance.now();
let quiet = false;

/** Silence progress output (tests that drive the harness). */
export function setQuiet(value: boolean): void {
  quiet = value;
}

/** Seconds since the process started, formatted `mm:ss`. */
export function elapsed(): string {
  const s = Math.floor((performance.now() - started) / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
}

/** One progress line on stderr. */
export function progress(scope: string, message: string): void {
  if (quiet) return;
  console.error(`[${elapsed()}] ${scope} › ${message}`);
}

/** A failure line that says where the logs are. */
export function failure(scope: string, message: string, logPath?: string): void {
  if (quiet) return;
  console.error(`[${elapsed()}] ${scope} ✗ ${message}${logPath ? ` (log: ${logPath})` : ""}`);
}
