import assert from "node:assert/strict";
import { type PairResult, parsePerftest } from "../../harness/guest/cnuas_ib.ts";
import {
  addrFlag,
  perftestFigures,
  perftestResult,
  perftestRowOf,
  type RdmaNode,
} from "../../harness/guest/roce_pair.ts";
import { type RowContext, RowFailure } from "../../harness/matrix/row.ts";

const LAT =
  " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    " +
  "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n" +
  " 2       1000          4.90           11.80        5.03            5.08        0.32   5.63   11.80\n";

const BW = " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n" +
  " 65536      1000             36.17              35.76                0.000572\n";

Deno.test("perftestFigures without flags names roce-e2e's keys: perftest.<prog>.<column>", () => {
  assert.deepEqual(perftestFigures("ib_send_bw", "", parsePerftest(BW)!), [
    { name: "perftest.ib_send_bw.BW_peak", value: 36.17, unit: "MiB/sec" },
    { name: "perftest.ib_send_bw.BW_average", value: 35.76, unit: "MiB/sec" },
    { name: "perftest.ib_send_bw.MsgRate", value: 0.000572, unit: "Mpps" },
  ]);
});

Deno.test("perftestFigures with flags names roce-verbs' keys: the flags between prog and column", () => {
  const names = (extra: string) =>
    perftestFigures("ib_send_lat", extra, parsePerftest(LAT)!).map((f) => f.name);
  assert.deepEqual(names("-c UD -s 4096"), [
    "perftest.ib_send_lat.c_UD_s_4096.t_min",
    "perftest.ib_send_lat.c_UD_s_4096.t_max",
    "perftest.ib_send_lat.c_UD_s_4096.t_typical",
    "perftest.ib_send_lat.c_UD_s_4096.t_avg",
    "perftest.ib_send_lat.c_UD_s_4096.t_stdev",
    "perftest.ib_send_lat.c_UD_s_4096.99%_percentile",
    "perftest.ib_send_lat.c_UD_s_4096.99.9%_percentile",
  ]);
  assert.equal(names("--use-srq")[3], "perftest.ib_send_lat.use_srq.t_avg");
});

Deno.test("perftestFigures skips the # columns and keeps each column's unit", () => {
  const f = perftestFigures("ib_send_lat", "", parsePerftest(LAT)!);
  assert.ok(f.every((x) => !x.name.includes("#")));
  assert.deepEqual(f.find((x) => x.name.endsWith(".t_avg")), {
    name: "perftest.ib_send_lat.t_avg",
    value: 5.08,
    unit: "usec",
  });
});

Deno.test("addrFlag: a GID index on RoCE, nothing (the LID) on native InfiniBand", () => {
  const dev = { ibdev: "cnuas_ib0", iface: "eth1" } as RdmaNode["dev"];
  const g = {} as RdmaNode["g"];
  const roce: RdmaNode = { g, dev, ip: "10.77.0.1", gid: 3 };
  const ib: RdmaNode = { g, dev, ip: "10.78.0.1" };
  assert.equal(addrFlag(roce, "-g"), " -g 3");
  assert.equal(addrFlag(roce, "-x"), " -x 3");
  assert.equal(addrFlag({ ...roce, gid: 0 }, "-x"), " -x 0");
  assert.equal(addrFlag(ib, "-g"), "");
  assert.equal(addrFlag(ib, "-x"), "");
});

Deno.test("perftestResult: a client that could not calibrate its clock gives way to the server", () => {
  const rowText = (bw: string) =>
    ` #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n` +
    ` 65536      1000             0.00               ${bw}  \t\t     0.000277\n`;
  const warn = "Correlation coefficient r^2: 0.244288 < 0.9\n";
  const good = perftestResult(rowText("15.00"), rowText("17.32"));
  assert.equal(good.side, "client");
  assert.equal(good.row?.["BW average[MiB/sec]"], 15);
  const voidClient = perftestResult(warn + rowText("0.00"), rowText("17.32"));
  assert.equal(voidClient.side, "server");
  assert.equal(voidClient.row?.["BW average[MiB/sec]"], 17.32);
  const neither = perftestResult(warn + rowText("0.00"), warn + rowText("0.00"));
  assert.equal(neither.row, undefined);
  assert.equal(neither.why, "neither end calibrated its clock");
  assert.equal(perftestResult("", "").why, "no result row in its output");
});

Deno.test("perftestRowOf: a row, a void calibration recorded as clockVoid, no row fails", () => {
  const measured: string[] = [];
  const logs: string[] = [];
  const ctx = {
    log: (l: string) => logs.push(l),
    measure: (name: string, value: number) => measured.push(`${name}=${value}`),
    expect: (ok: boolean, why: string) => {
      if (!ok) throw new RowFailure(why);
    },
  } as unknown as RowContext;
  const pair = (clientOut: string, serverOut: string): PairResult => ({
    serverCode: 0,
    serverOut,
    clientCode: 0,
    clientOut,
  });
  const warn = "Correlation coefficient r^2: 0.244288 < 0.9\n";
  assert.equal(perftestRowOf(ctx, "ib_send_bw", "x", pair(BW, ""))?.["BW average[MiB/sec]"], 35.76);
  assert.deepEqual(measured, []);
  assert.equal(perftestRowOf(ctx, "ib_send_bw", "x", pair(warn + BW, warn + BW)), undefined);
  assert.deepEqual(measured, ["perftest.ib_send_bw.clockVoid=1"]);
  assert.ok(logs.some((l) => /no figures recorded/.test(l)));
  assert.throws(() => perftestRowOf(ctx, "ib_send_bw", "x", pair("", "")), RowFailure);
});
