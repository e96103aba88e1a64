import assert from "node:assert/strict";
import {
  parseIbstat,
  parseIbvDevinfo,
  parsePerftest,
  parsePingpong,
  parseRstream,
  pingpongDataErrors,
  roceV2GidIndex,
  rpingDataErrors,
  rstreamCount,
  rstreamDifferences,
  rstreamSize,
} from "../../harness/guest/cnuas_ib.ts";
import { TABLE_4_1, tableDifferences } from "../matrix/ibstat.ts";
import { perfFigures, speedup } from "../../harness/bench/rdma_perf.ts";

/** `ibv_devinfo -v` of cnuas_ib0 (rdma-core 56.1), trimmed to what the row reads. */
const DEVINFO = `hca_id:	cnuas_ib0
	transport:			InfiniBand (0)
	fw_ver:				0.1.0
	node_guid:			00c7:0aff:fe00:0000
	vendor_id:			0x1af4
	vendor_part_id:			4336
	hw_ver:				0x1
	phys_port_cnt:			1
	max_qp:				256
	max_qp_wr:			4096
	device_cap_flags:		0x00001800
					SYS_IMAGE_GUID
	max_sge:			16
	max_cq:				256
	max_cqe:			4096
	max_mr:				256
	max_pd:				64
	max_qp_rd_atom:			16
	max_qp_init_rd_atom:		16
	atomic_cap:			ATOMIC_HCA (1)
	max_mcast_grp:			256
	max_mcast_qp_attach:		256
	max_srq:			256
	max_srq_wr:			4096
	max_srq_sge:			16
	max_pkeys:			1
	tso_caps:
		max_tso:			0
		port:	1
			state:			PORT_ACTIVE (4)
			max_mtu:		4096 (5)
			active_mtu:		1024 (3)
			link_layer:		Ethernet
			max_msg_sz:		0x7fffffff
			pkey_tbl_len:		1
			gid_tbl_len:		1024
			active_width:		4X (2)
			active_speed:		25.0 Gbps (32)
			phys_state:		LINK_UP (5)
			GID[  0]:		fe80::c7:aff:fe00:0, RoCE v2
			GID[  1]:		::ffff:10.77.0.1, RoCE v2
`;

const IBSTAT = `CA 'cnuas_ib0'
	CA type: cnuas-vnic
	Number of ports: 1
	Firmware version: 0.1.0
	Hardware version: 1
	Port 1:
		State: Active
		Rate: 100
		Link layer: Ethernet
`;

Deno.test("parseIbvDevinfo separates device attributes, port attributes and GIDs", () => {
  const d = parseIbvDevinfo(DEVINFO);
  assert.equal(d.hcaId, "cnuas_ib0");
  assert.equal(d.device.get("max_qp"), "256");
  assert.equal(d.device.get("atomic_cap"), "ATOMIC_HCA (1)");
  assert.equal(d.ports.length, 1);
  assert.equal(d.ports[0].get("active_speed"), "25.0 Gbps (32)");
  assert.equal(d.device.get("active_speed"), undefined);
  assert.equal(d.gids[0].get(1), "::ffff:10.77.0.1");
});

Deno.test("parseIbstat separates the CA lines from the port lines", () => {
  const s = parseIbstat(IBSTAT);
  assert.equal(s.ca.get("Firmware version"), "0.1.0");
  assert.equal(s.ports[0].get("Rate"), "100");
  assert.equal(s.ca.get("Rate"), undefined);
});

Deno.test("the datasheet table matches what cnuas_ib prints", () => {
  assert.deepEqual(tableDifferences(TABLE_4_1, parseIbvDevinfo(DEVINFO), parseIbstat(IBSTAT)), []);
});

Deno.test("a differing attribute is reported by its datasheet name", () => {
  const wrong = parseIbvDevinfo(DEVINFO.replace("max_pd:				64", "max_pd:				32"));
  const diffs = tableDifferences(TABLE_4_1, wrong, parseIbstat(IBSTAT));
  assert.equal(diffs.length, 1);
  assert.match(diffs[0], /^Maximum protection domains: ibv_devinfo max_pd is 32, want 64$/);
});

Deno.test("a missing attribute is reported as absent", () => {
  const diffs = tableDifferences(
    TABLE_4_1,
    parseIbvDevinfo(DEVINFO),
    parseIbstat(IBSTAT.replace("\tHardware version: 1\n", "")),
  );
  assert.deepEqual(diffs, ["Hardware version: ibstat Hardware version is (absent), want 1"]);
});

Deno.test("roceV2GidIndex finds the RoCE v2 GID of an IPv4 address, not its v1 twin", () => {
  const table = [
    { index: 0, gid: "fe80:0000:0000:0000:00c7:0aff:fe00:0000", type: "RoCE v2" },
    { index: 1, gid: "0000:0000:0000:0000:0000:ffff:0a4d:0001", type: "IB/RoCE v1" },
    { index: 2, gid: "0000:0000:0000:0000:0000:ffff:0a4d:0001", type: "RoCE v2" },
  ];
  assert.equal(roceV2GidIndex(table, "10.77.0.1"), 2);
  assert.equal(roceV2GidIndex(table, "10.77.0.2"), -1);
});

Deno.test("parsePingpong reads bandwidth and time per iteration", () => {
  const out =
    "2000 bytes in 0.30 seconds = 0.05 Mbit/sec\n1000 iters in 0.30 seconds = 300.50 usec/iter\n";
  assert.deepEqual(parsePingpong(out), { mbitPerSec: 0.05, usecPerIter: 300.5 });
  assert.equal(parsePingpong("Failed to modify QP to RTR"), undefined);
});

Deno.test("parsePerftest keys a bandwidth row by its headers, units included", () => {
  const r = parsePerftest(
    " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n" +
      " 65536      1000             36.17              35.76                0.000572\n",
  );
  assert.deepEqual(r, {
    "#bytes": 65536,
    "#iterations": 1000,
    "BW peak[MiB/sec]": 36.17,
    "BW average[MiB/sec]": 35.76,
    "MsgRate[Mpps]": 0.000572,
  });
});

Deno.test("parsePerftest reads latency columns whose names hold spaces", () => {
  const r = parsePerftest(
    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    " +
      "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n" +
      " 2       1000          4.90           11.80        5.03     	       5.08        	0.32   		5.63    		11.80\n",
  );
  assert.equal(r?.["t_avg[usec]"], 5.08);
  assert.equal(r?.["99.9% percentile[usec]"], 11.8);
});

Deno.test("perfFigures gives MiB/s and messages/s for bandwidth, typical and average µs for latency", () => {
  assert.deepEqual(
    perfFigures("ib_send_bw", { "BW average[MiB/sec]": 35.76, "MsgRate[Mpps]": 0.000572 }),
    {
      MiBps: { value: 35.76, unit: "MiB/s" },
      msgPerSec: { value: 572, unit: "msg/s" },
    },
  );
  assert.deepEqual(perfFigures("ib_send_lat", { "t_typical[usec]": 5.03, "t_avg[usec]": 5.08 }), {
    usec: { value: 5.03, unit: "us" },
    usecAvg: { value: 5.08, unit: "us" },
  });
});

Deno.test("speedup is above 1 when cnuas_ib is faster, for bandwidth and for latency", () => {
  assert.equal(speedup("ib_send_bw.64.MiBps", 20, 10), 2);
  assert.equal(speedup("ib_send_lat.2.usec", 50, 100), 2);
  assert.equal(speedup("ib_send_lat.2.usecAvg", 50, 100), 2);
  assert.equal(speedup("ib_send_lat.2.usec", 100, 50), 0.5);
  assert.equal(speedup("ib_send_bw.64.MiBps", 0, 10), 0);
});

Deno.test("pingpongDataErrors finds the lines --chk prints for a wrong page, none in a clean run", () => {
  const clean = "  local address:  LID 0x0000, QPN 0x000011, PSN 0x3c1a2b, GID ::ffff:10.77.0.1\n" +
    "8192000 bytes in 0.50 seconds = 131.07 Mbit/sec\n1000 iters in 0.50 seconds = 500.00 usec/iter\n";
  assert.deepEqual(pingpongDataErrors(clean), []);
  const bad = clean + "invalid data in page 0\ninvalid data in page 3\n";
  assert.deepEqual(pingpongDataErrors(bad), ["invalid data in page 0", "invalid data in page 3"]);
});

Deno.test("rpingDataErrors finds rping -V's mismatch line", () => {
  assert.deepEqual(
    rpingDataErrors("ping data: rdma-ping-0: ABCDEFGH\nclient DISCONNECT EVENT...\n"),
    [],
  );
  assert.deepEqual(rpingDataErrors("ping data: rdma-ping-0: ABC\ndata mismatch!\n"), [
    "data mismatch!",
  ]);
});

/** rstream's output for -S 4096 -C 200 (librdmacm's printf formats, figures made up). */
const RSTREAM = "name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer\n" +
  "custom    4k      200     1       1.5m        0.12s      0.11     291.00\n";

Deno.test("parseRstream reads the result line, not the header", () => {
  assert.deepEqual(parseRstream(RSTREAM), [{
    name: "custom",
    bytes: "4k",
    xfers: "200",
    iters: "1",
    total: "1.5m",
    sec: 0.12,
    gbitPerSec: 0.11,
    usecPerXfer: 291,
  }]);
  assert.deepEqual(parseRstream("rconnect: Connection refused\n"), []);
});

Deno.test("rstreamSize and rstreamCount abbreviate as librdmacm's size_str and cnt_str", () => {
  assert.deepEqual([1000, 4096, 65536, 1638400, 6553600, 3 * 2 ** 30].map(rstreamSize), [
    "1000",
    "4k",
    "64k",
    "1.5m",
    "6.2m",
    "3g",
  ]);
  assert.deepEqual([1, 200, 1000, 2500, 2_000_000].map(rstreamCount), [
    "1",
    "200",
    "1k",
    "2k",
    "2m",
  ]);
});

Deno.test("rstreamDifferences accepts exactly the run asked for", () => {
  assert.deepEqual(rstreamDifferences(RSTREAM, { size: 4096, count: 200, iters: 1 }), []);
});

Deno.test("rstreamDifferences names a transfer count, size or total other than asked", () => {
  assert.deepEqual(rstreamDifferences(RSTREAM, { size: 4096, count: 201, iters: 1 }), [
    "xfers 200, want 201",
  ]);
  assert.deepEqual(rstreamDifferences(RSTREAM, { size: 8192, count: 200, iters: 1 }), [
    "bytes 4k, want 8k",
    "total 1.5m, want 3.1m",
  ]);
});

Deno.test("rstreamDifferences fails a missing result line and the tool's own data check", () => {
  assert.deepEqual(
    rstreamDifferences("rconnect: Connection refused\n", {
      size: 4096,
      count: 1,
      iters: 1,
    }),
    ["0 result lines, want 1"],
  );
  assert.deepEqual(
    rstreamDifferences("data verification failed byte 4095\n" + RSTREAM, {
      size: 4096,
      count: 200,
      iters: 1,
    }),
    ["data verification failed byte 4095"],
  );
});
