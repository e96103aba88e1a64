/**
 * The base of the harness's typed errors. Each error says whether its message
 * is the whole story for a user (bad input, a missing package, a checksum) —
 * then the CLI prints just the message — or whether it is a fault a developer
 * debugs, when the CLI adds the top of the stack.
 */

/** An error the harness raises on purpose, with a class name as its `name`. */
export class HilError extends Error {
  /** True when the message alone tells a user what to do: no stack trace is printed. */
  readonly userFacing: boolean = false;

  /** An error with `message`; `options.cause` keeps the error it wraps. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    // the subclass's own name, so `error: ...` lines and logs say which check failed
    this.name = new.target.name;
  }
}

/** An error caused by what the user asked for or has installed; printed without a stack. */
export class UserError extends HilError {
  /** Always true: a user's mistake is told in one line. */
  override readonly userFacing: boolean = true;
}

/** Bad command-line input. */
export class UsageError extends UserError {}

/** How the CLI shows an error: the message, plus the stack's top for a fault. */
export function describeError(e: unknown): string {
  if (!(e instanceof Error)) return `error: ${String(e)}`;
  const head = `error: ${e.message}`;
  if (e instanceof HilError && e.userFacing) return head;
  const stack = e.stack?.split("\n").slice(1, 6).join("\n");
  return stack ? `${head}\n${stack}` : head;
}
