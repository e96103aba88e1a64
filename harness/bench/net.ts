/**
 * Bench of cnuas_net: TCP throughput guest to guest through the cnuas-switch,
 * beside the same two guests over QEMU's own `-netdev socket` virtio-net on
 * the same host, as a ratio, in one run (the same guests, the same moment).
 *
 * The virtio side needs the lab to give each guest a second virtio-net NIC
 * whose backend is `-netdev socket` (g0 listens, g1 connects). Until the lab
 * has that device kind, the bench measures the cnuas_net side and reports
 * the missing NIC as an error naming what to add.
 */
import { HilError } from "../errors.ts";
import type { Config } from "../config.ts";
import { measuredSoFar, runBenchRow } from "./one_row.ts";
import type { Row, RowContext } from "../matrix/row.ts";
import type { Measurement } from "../report/schema.ts";
import { loadCnuasNet, waitCarrier } from "../guest/cnuas_net.ts";
import { sh, type ShOptions, shq, waitListening } from "../guest/shell.ts";
import type { Guest } from "../vm/types.ts";

/** Bytes per TCP transfer (from /dev/zero: measures the path, not a generator). */
export const BENCH_NET_BYTES = 128 * 1024 * 1024;

/** The bench could not measure a side; says what is missing. */
export class BenchNetError extends HilError {}

/** How this bench's guest commands fail: as its own error, not a row failure. */
const FAIL: ShOptions = { error: BenchNetError };

/** Options of `benchNet`. */
export interface BenchNetOptions {
  /** Bytes per transfer; default BENCH_NET_BYTES. */
  bytes?: number;
  /** MTU on both paths; default 9000 (virtio-net takes it too). */
  mtu?: number;
}

/** One side of the comparison: interfaces and addresses of g0 and g1. */
interface Path {
  name: string;
  ifaces: [string, string];
  ips: [string, string];
}

async function configure(g: Guest, iface: string, ip: string, mtu: number): Promise<void> {
  await sh(
    g,
    `sysctl -qw net.ipv6.conf.${iface}.disable_ipv6=1; ip addr flush dev ${shq(iface)}; ` +
      `ip addr add ${ip}/24 dev ${shq(iface)}; ip link set dev ${shq(iface)} mtu ${mtu} up`,
    FAIL,
  );
  if (!await waitCarrier(g, iface, true, 30)) {
    throw new BenchNetError(`${g.name} ${iface}: no carrier`);
  }
}

/**
 * The virtio-net interface that is not the management NIC (the one the
 * default route uses): the `-netdev socket` NIC, or undefined.
 */
async function socketVirtioIface(g: Guest): Promise<string | undefined> {
  const out = await sh(
    g,
    `mgmt=$(ip -o route show default | awk '{print $5}' | head -n1); ` +
      `for d in /sys/class/net/*; do n=$(basename "$d"); [ "$n" = "$mgmt" ] && continue; ` +
      `[ "$(basename "$(readlink -f "$d/device/driver" 2>/dev/null)")" = virtio_net ] && echo "$n"; ` +
      `done; true`,
    FAIL,
  );
  return out.trim().split("\n").find((l) => l.length > 0);
}

/** Seconds to push `bytes` over TCP from g0 to g1 on `path`. */
async function tcpSeconds(
  guests: Guest[],
  path: Path,
  bytes: number,
  port: number,
): Promise<number> {
  const [a, b] = guests;
  await sh(
    b,
    `rm -f /tmp/bn.done; setsid sh -c 'nc -d -l ${port} > /dev/null; echo $? > /tmp/bn.done' ` +
      `</dev/null >/dev/null 2>&1 & ${waitListening([port], 100)}`,
    FAIL,
  );
  const out = await sh(
    a,
    `s=$(date +%s.%N); head -c ${bytes} /dev/zero | nc -N ${path.ips[1]} ${port} || exit 7; ` +
      `e=$(date +%s.%N); echo "$s $e"`,
    { ...FAIL, timeoutSec: 900 },
  );
  await sh(b, `for i in $(seq 120); do [ -s /tmp/bn.done ] && exit 0; sleep 0.5; done; exit 1`, {
    ...FAIL,
    timeoutSec: 90,
  });
  const [s, e] = out.trim().split(/\s+/).map(Number);
  return e - s;
}

/** The bench's private row: both paths measured on the same two guests. */
function benchRow(opts: Required<BenchNetOptions>): Row {
  return {
    id: "bench-net",
    title: "TCP throughput: cnuas_net through the switch vs virtio-net over -netdev socket",
    needs: {
      guests: 2,
      fabric: "eth",
      builds: ["qemu", "image"],
      devices: { vnic: 1, virtioSocketNet: true },
    },
    timeoutSec: 900,
    async run(ctx: RowContext) {
      const guests = ctx.guests;
      const cnuas: Path = { name: "cnuasNet", ifaces: ["", ""], ips: ["10.78.0.1", "10.78.0.2"] };
      for (const [i, g] of guests.entries()) {
        const [nic] = await loadCnuasNet(g, 1);
        cnuas.ifaces[i] = nic.iface;
        await configure(g, nic.iface, cnuas.ips[i], opts.mtu);
      }
      const cnuasSec = await ctx.step(
        "TCP over cnuas_net",
        () => tcpSeconds(guests, cnuas, opts.bytes, 5101),
      );
      const cnuasMBps = opts.bytes / 1e6 / cnuasSec;
      ctx.measure("cnuasNetMBps", Number(cnuasMBps.toFixed(2)), "MB/s");

      const virtio = await Promise.all(guests.map(socketVirtioIface));
      if (virtio.some((v) => v === undefined)) {
        throw new BenchNetError(
          "the guests have no second virtio-net NIC on `-netdev socket`: the lab must add that " +
            "device kind (g0 listen=127.0.0.1:<port>, g1 connect=127.0.0.1:<port>) for the ratio",
        );
      }
      const vpath: Path = {
        name: "virtioSocket",
        ifaces: [virtio[0]!, virtio[1]!],
        ips: ["10.79.0.1", "10.79.0.2"],
      };
      for (const [i, g] of guests.entries()) {
        await configure(g, vpath.ifaces[i], vpath.ips[i], opts.mtu);
      }
      const virtioSec = await ctx.step(
        "TCP over virtio-net -netdev socket",
        () => tcpSeconds(guests, vpath, opts.bytes, 5102),
      );
      const virtioMBps = opts.bytes / 1e6 / virtioSec;
      ctx.measure("virtioSocketMBps", Number(virtioMBps.toFixed(2)), "MB/s");
      ctx.measure("cnuasToVirtioRatio", Number((cnuasMBps / virtioMBps).toFixed(3)), "ratio");
    },
  };
}

/**
 * TCP throughput over cnuas_net and over virtio-net `-netdev socket`, and
 * their ratio. Throws BenchNetError (naming what was measured) when a side
 * could not be measured.
 *
 * @example
 * ```ts
 * const m = await benchNet(config);
 * console.log(m.cnuasToVirtioRatio?.value);
 * ```
 */
export async function benchNet(
  config: Config,
  options: BenchNetOptions = {},
): Promise<Record<string, Measurement>> {
  const opts = { bytes: options.bytes ?? BENCH_NET_BYTES, mtu: options.mtu ?? 9000 };
  const r = await runBenchRow(config, benchRow(opts));
  if (r.status !== "PASS") {
    throw new BenchNetError(`bench-net ${r.status}: ${r.reason}${measuredSoFar(r)}`);
  }
  return r.measurements;
}
