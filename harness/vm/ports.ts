/** Free TCP ports on loopback for `hostfwd`. */

/**
 * Ports this process handed out: rows run at once (matrix/lanes.ts), and a
 * port is free only until the QEMU it was meant for binds it, seconds later,
 * so one the kernel offers again in that window must not go to a second guest.
 */
const handedOut = new Set<number>();

/** A TCP port on 127.0.0.1 that nothing listens on right now, and not handed out before. */
export function freePort(): number {
  for (let attempt = 0; attempt < 100; attempt++) {
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (l.addr as Deno.NetAddr).port;
    l.close();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`the kernel offered only ports handed out before (${handedOut.size} so far)`);
}
