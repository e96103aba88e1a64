/** Free TCP ports on loopback for `hostfwd`. */

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}
