/**
 * The dmesg guard: kernel log lines that fail a row, with the one ignore list.
 */

/** Patterns that mean the kernel found a bug. */
export const DMESG_FAILURE_PATTERNS: RegExp[] = [
  /BUG:/,
  /WARNING:/,
  /Oops/,
  /general protection/,
  /KASAN/,
  /list_add corruption/,
  /list_del corruption/,
  /Kernel panic/,
  /soft lockup/,
  /blocked for more than \d+ seconds/,
];

/**
 * Lines that match a failure pattern but are not bugs of ours, each with why.
 */
export const DMESG_IGNORE: { pattern: RegExp; why: string }[] = [
  {
    pattern: /WARNING: CPU: \d+ PID: \d+ at arch\/x86\/kernel\/fpu/,
    why: "TCG's -cpu max exposes FPU features the kernel warns about",
  },
];

/** Lines of a kernel log that fail the guard. */
export function dmesgViolations(log: string): string[] {
  return log.split("\n").filter((line) =>
    DMESG_FAILURE_PATTERNS.some((p) => p.test(line)) &&
    !DMESG_IGNORE.some((i) => i.pattern.test(line))
  );
}
