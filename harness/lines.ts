/**
 * Newline-delimited text from a byte stream: both JSON-lines peers the
 * harness talks to (QEMU's QMP, the switch's control socket) frame their
 * messages this way, and neither of those rooms should depend on the other.
 */

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
