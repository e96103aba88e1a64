/**
 * Running the sanitizer build of QEMU (`qemu-asan`, configured with
 * `--enable-sanitizers`): the environment that makes every AddressSanitizer
 * and UBSan report fatal and writes it to a file in a directory of ours, and
 * the reader that collects those files afterwards. A report aborts QEMU (the
 * qtest client then fails the sequence) and its text is what the row shows.
 *
 * @example
 * ```ts
 * const env = sanitizerEnv("/tmp/row/sanitizer");
 * // ... run QEMU with env ...
 * const reports = await sanitizerReports("/tmp/row/sanitizer");
 * ```
 */
import { join } from "node:path";

/** File name prefixes of the reports (the runtime appends `.<pid>`). */
const PREFIXES = { asan: "asan", ubsan: "ubsan" } as const;

/**
 * Lines the runtime writes to the log file that report nothing: ASan's note,
 * at QEMU's first coroutine switch, that it cannot follow swapcontext fully
 * (QEMU annotates its fiber switches; the note comes anyway).
 */
const NOT_REPORTS = [/^==\d+==WARNING: ASan doesn't fully support makecontext\/swapcontext/];

/** A log file's lines that say something: not blank, not a known note. */
function reportLines(text: string): string[] {
  return text.split("\n").filter((l) => l.trim() !== "" && !NOT_REPORTS.some((re) => re.test(l)));
}

/** Whether a log file's text holds a report: any line but blanks and known notes. */
export function isReport(text: string): boolean {
  return reportLines(text).length > 0;
}

/** One sanitizer report file. */
export interface SanitizerReport {
  /** Absolute path of the file. */
  path: string;
  /** Its text. */
  text: string;
}

/**
 * `ASAN_OPTIONS` and `UBSAN_OPTIONS` for a QEMU whose reports go to `dir`.
 * halt_on_error and abort_on_error: the first report stops QEMU, so a fuzz
 * sequence cannot run on past corrupted state and the crash marks the op.
 * Leak detection is off: the harness ends QEMU with SIGKILL, and QEMU's
 * exit-time allocations are not the guest's doing.
 */
export function sanitizerEnv(dir: string): Record<string, string> {
  const common = "halt_on_error=1:abort_on_error=1:print_stacktrace=1";
  return {
    ASAN_OPTIONS: `${common}:detect_leaks=0:log_path=${optionValue(join(dir, PREFIXES.asan))}`,
    UBSAN_OPTIONS: `${common}:log_path=${optionValue(join(dir, PREFIXES.ubsan))}`,
  };
}

/**
 * A value for a sanitizer options list, which the runtime splits at ':',
 * ',' and white space unless the value is quoted: a reports directory with a
 * ':' in its path (`--reports-dir /tmp/a:b`) sent the reports elsewhere,
 * and a crash would have gone unread. A quote inside cannot be escaped.
 */
function optionValue(value: string): string {
  if (value.includes('"')) throw new Error(`a sanitizer log path may not contain '"': ${value}`);
  return `"${value}"`;
}

/**
 * The line that names a report: its `SUMMARY:` line, else its first line
 * that is not a note. Replays of one failure (the shrinker's) share it.
 */
export function reportSummary(text: string): string {
  const lines = reportLines(text);
  return lines.find((l) => l.startsWith("SUMMARY:")) ?? lines[0] ?? "";
}

/** Every file in `dir` holding a report (none when it does not exist), by name. */
export async function sanitizerReports(dir: string): Promise<SanitizerReport[]> {
  const out: SanitizerReport[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (!e.isFile) continue;
      if (!Object.values(PREFIXES).some((p) => e.name.startsWith(`${p}.`))) continue;
      const path = join(dir, e.name);
      const text = await Deno.readTextFile(path);
      if (isReport(text)) out.push({ path, text });
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return out.sort((a, b) => a.path.localeCompare(b.path));
}
