/**
 * Running host commands with their output captured to a log file, so a
 * failure can say where to look; quoting for a shell; reading a stream as
 * lines (both JSON-lines peers, QEMU's QMP and the switch's control socket,
 * frame their messages that way).
 */
import { HilError } from "./errors.ts";
import { dirname } from "node:path";
import { spawnArgv } from "./priority.ts";

/** A host command that exited non-zero; names the log holding its output. */
export class CommandError extends HilError {
  constructor(
    readonly argv: string[],
    readonly code: number,
    readonly logPath: string | undefined,
    readonly tail: string,
  ) {
    super(
      `${argv.slice(0, 4).join(" ")}${argv.length > 4 ? " …" : ""} exited ${code}` +
        (logPath ? `; see ${logPath}` : "") + (tail ? `\n--- last lines ---\n${tail}` : ""),
    );
  }
}

/** Options of `run`. */
export interface ExecOptions {
  cwd?: string;
  env?: Record<string, string>;
  /** Append stdout and stderr here instead of returning them. */
  logPath?: string;
  /** Bytes for stdin. */
  stdin?: Uint8Array | string;
  /** Do not throw on a non-zero exit. */
  allowFail?: boolean;
}

/** Result of `run`. */
export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Run a command to completion. With `logPath` the output goes to that file
 * (appended, preceded by the command line) and a failure carries its tail.
 * Inside `atIdlePriority` (priority.ts) it runs at idle CPU and I/O priority.
 */
export async function exec(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
  let logFile: Deno.FsFile | undefined;
  if (opts.logPath) {
    await Deno.mkdir(dirname(opts.logPath), { recursive: true });
    logFile = await Deno.open(opts.logPath, { create: true, append: true });
    await logFile.write(new TextEncoder().encode(`\n$ ${argv.join(" ")}\n`));
  }
  try {
    const spawned = spawnArgv(argv);
    const child = new Deno.Command(spawned[0], {
      args: spawned.slice(1),
      cwd: opts.cwd,
      env: { PATH: hostPath(), ...opts.env },
      stdin: opts.stdin !== undefined ? "piped" : "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    if (opts.stdin !== undefined) {
      const w = child.stdin.getWriter();
      await w.write(
        typeof opts.stdin === "string" ? new TextEncoder().encode(opts.stdin) : opts.stdin,
      );
      await w.close();
    }
    let stdout = "";
    let stderr = "";
    if (logFile) {
      const f = logFile;
      const pump = async (s: ReadableStream<Uint8Array>) => {
        for await (const chunk of s) await f.write(chunk);
      };
      await Promise.all([pump(child.stdout), pump(child.stderr)]);
    } else {
      [stdout, stderr] = await Promise.all([
        new Response(child.stdout).text(),
        new Response(child.stderr).text(),
      ]);
    }
    const { code } = await child.status;
    if (code !== 0 && !opts.allowFail) {
      const tail = opts.logPath ? await tailOf(opts.logPath, 20) : (stderr || stdout).slice(-2000);
      throw new CommandError(argv, code, opts.logPath, tail);
    }
    return { code, stdout, stderr };
  } finally {
    logFile?.close();
  }
}

/** The last `n` lines of a text file ("" when unreadable). */
export async function tailOf(path: string, n: number): Promise<string> {
  try {
    const text = await Deno.readTextFile(path);
    return text.trimEnd().split("\n").slice(-n).join("\n");
  } catch {
    return "";
  }
}

/**
 * PATH for host tools: Debian's own directories first, so `python3` is
 * Debian's (meson and QEMU's configure need it), not a pyenv build.
 */
export function hostPath(): string {
  const sys = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];
  const rest = (Deno.env.get("PATH") ?? "").split(":").filter((p) => p && !sys.includes(p));
  return [...sys, ...rest].join(":");
}

/**
 * Quote `s` as one word for a POSIX shell, on the host or in a guest. Inside
 * single quotes the shell expands nothing (`$`, backslashes, newlines, `*`
 * all stay literal); only a single quote cannot appear there, so each one
 * closes the quotes, adds an escaped quote, and reopens them.
 */
export function shq(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/**
 * The lines of `stream`, UTF-8 decoded and without their `\n`, as they
 * complete. Text after the last `\n` when the stream ends is not a line and
 * is dropped; a stream error is thrown from the iteration.
 *
 * @example
 * ```ts
 * for await (const line of readLines(conn.readable)) console.log(JSON.parse(line));
 * ```
 */
export async function* readLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const dec = new TextDecoder();
  let buf = "";
  for await (const chunk of stream) {
    buf += dec.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      yield line;
    }
  }
}
