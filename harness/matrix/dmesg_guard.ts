/**
 * The dmesg guard: kernel log lines that fail a row, with the one ignore list.
 */

/** Patterns that mean the kernel found a bug. */
export const DMESG_FAILURE_PATTERNS: RegExp[] = [
  /BUG:/,
  /kernel BUG at /,
  /WARNING:/,
  /Oops/,
  /general protection/,
  /\bKASAN:/,
  /\bUBSAN:/,
  /list_add corruption/,
  /list_del corruption/,
  // refcount_t: saturated / underflow / addition on 0 / decrement hit 0
  /refcount_t: /,
  /Kernel panic/,
  /soft lockup/,
  /blocked for more than \d+ seconds/,
  // RCU stalls (a CPU stuck with preemption or interrupts off)
  /rcu: INFO: rcu_\w+ detected stalls/,
  /rcu_\w+ self-detected stall/,
  // lockdep: listed on their own although most start with "WARNING:", so an
  // ignore entry for some WARNING can never hide one of them
  /possible circular locking dependency/,
  /inconsistent lock state/,
  /possible recursive locking/,
  /suspicious RCU usage/,
  /DEBUG_LOCKS_WARN_ON/,
];

/**
 * Lines that match a failure pattern but are not bugs of ours, each with why.
 * An entry must match one exact line, never a family of warnings.
 *
 * Empty: the guests' dmesg under TCG (`-cpu max`, Debian 6.12) has no
 * warning at boot — its x86/fpu lines ("Supporting XSAVE feature …",
 * "Enabled xstate features 0x21f …") match no failure pattern.
 */
export const DMESG_IGNORE: { pattern: RegExp; why: string }[] = [];

/** Lines of a kernel log that fail the guard. */
export function dmesgViolations(log: string): string[] {
  return log.split("\n").filter((line) =>
    DMESG_FAILURE_PATTERNS.some((p) => p.test(line)) &&
    !DMESG_IGNORE.some((i) => i.pattern.test(line))
  );
}
