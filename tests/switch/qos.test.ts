/**
 * Egress QoS of a live eth switch against the model (harness/models/switch_qos.ts):
 * a 2→1 incast (ports 1 and 2 into port 3) with the egress port held while
 * the burst arrives, so every queue length, drop, mark and PFC frame is
 * deterministic, then released at a drain rate.
 */
import assert from "node:assert/strict";
import {
  decodePfc,
  DEFAULT_QUANTA,
  encodePfc,
  ipv4ChecksumOk,
  pauseNs,
  PFC_DST,
  PFC_FRAME_LEN,
  QosQueuesModel,
  SWITCH_MAC,
} from "../../harness/models/switch_qos.ts";
import { readPcapng } from "../../harness/fabric/pcapng.ts";
import { withRig } from "./rig.ts";
import type { Rig } from "./traffic.ts";
import {
  drainPort,
  ipFrame,
  learnAll,
  pfcSequence,
  plainFrame,
  receive,
  same,
  sendBurst,
  seqOf,
} from "./qos_traffic.ts";

const ROCE_DSCP = 26; // → priority 3 by the default map (DSCP / 8)
const SLOW = 3;

/** Release the held port and check it delivers exactly what the model dequeues. */
async function releaseAndCompare(
  rig: Rig,
  model: QosQueuesModel,
  drainMbps: number,
): Promise<{ events: ReturnType<QosQueuesModel["dequeue"]>[]; ms: number }> {
  const want: NonNullable<ReturnType<QosQueuesModel["dequeue"]>>[] = [];
  for (let d = model.dequeue(SLOW); d; d = model.dequeue(SLOW)) want.push(d);
  const t0 = performance.now();
  await rig.fabric.qosSet({ port: SLOW, hold: false, drainMbps });
  const got = receive(rig, SLOW, want.length).data;
  const ms = performance.now() - t0;
  for (const [i, d] of want.entries()) {
    const at = got[i].findIndex((b, k) => b !== d.frame[k]);
    assert.ok(
      same(got[i], d.frame),
      `frame ${i} out of port ${SLOW}: got seq ${seqOf(got[i])}, model says ${seqOf(d.frame)}` +
        (at >= 0 ? `; first differing byte ${at}: ${got[i][at]} vs ${d.frame[at]}` : ""),
    );
  }
  assert.equal(rig.clients.get(SLOW)!.recv(50), null, "more frames than the model dequeued");
  return { events: want, ms };
}

Deno.test("qos (a): a 2→1 incast without PFC or ECN drops queue_full on the egress port, as the model says; the drain rate paces the rest", async () => {
  await withRig("eth", 3, async (rig) => {
    const model = new QosQueuesModel({ queueDepth: 32, maxPorts: 3 });
    await learnAll(rig);
    await rig.fabric.qosSet({ port: SLOW, hold: true });
    let seq = 0;
    for (let round = 0; round < 4; round++) {
      for (const src of [1, 2]) {
        const burst = Array.from({ length: 12 }, () => ipFrame(SLOW, src, ROCE_DSCP, 0, seq++));
        for (const f of burst) model.enqueue(SLOW, f, src);
        await sendBurst(rig, src, burst);
      }
    }
    const p3 = (await rig.fabric.ports()).find((p) => p.port === SLOW)!;
    assert.equal(p3.queueLen, 32);
    assert.equal(p3.drops.queue_full, model.counters(SLOW, 3).queueFull);
    assert.equal(p3.drops.queue_full, 96 - 32);
    const { ms } = await releaseAndCompare(rig, model, 2);
    // 31 frames of 200 bytes after the first at 2 Mbit/s: 0.8 ms each.
    assert.ok(ms >= 31 * 0.8 * 0.9, `drained 32 frames in ${ms.toFixed(1)} ms at 2 Mbit/s`);
    const s = (await rig.fabric.qosStats(SLOW))[0].prios[3];
    assert.equal(s.queueFull, 64);
    assert.equal(s.txFrames, 32);
    assert.equal(s.pauseSent + s.pfcViolation + s.ecnMarked, 0);
    for (const src of [1, 2]) assert.equal(drainPort(rig, src).pfc.length, 0, "PFC is off");
  }, { queueDepth: 32 });
});

Deno.test("qos (b): PFC on the RoCE priority: XOFF to both senders above XOFF, refreshed, XON at XON, no drops, other priorities flow", async () => {
  await withRig("eth", 3, async (rig) => {
    const model = new QosQueuesModel({ queueDepth: 32, maxPorts: 3 });
    const cfg = { pfc: [3], prios: [{ prio: 3, xoff: 8, xon: 4 }] };
    model.configure(SLOW, cfg);
    await learnAll(rig);
    // 100 Mb/s nominal: 65535 quanta pause 335 ms, refreshed every 168 ms.
    await rig.fabric.qosSet({ port: SLOW, hold: true, linkMbps: 100, ...cfg });
    const capPath = await Deno.makeTempFile({ suffix: ".pcapng" });
    await rig.fabric.startCapture(capPath);
    const before = await rig.fabric.stats();
    let seq = 0;
    // One frame at a time, each waited for: a PFC frame the switch sends is
    // in its port's socket by then, so each arrives with the frame the model
    // says causes it (the 9th: the queue above xoff 8), at no other.
    const xoff = new Map<number, Uint8Array>();
    for (const src of [1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]) {
      const f = ipFrame(SLOW, src, ROCE_DSCP, 0, seq++);
      const want = model.enqueue(SLOW, f, src).pfc.map((e) => e.port);
      await sendBurst(rig, src, [f]);
      const got = [1, 2].filter((p) => {
        const pfc = drainPort(rig, p).pfc;
        if (pfc.length) xoff.set(p, pfc[0]);
        return pfc.length > 0;
      });
      assert.deepEqual(got, want, `PFC frames after frame ${seq}: ports ${got}, model ${want}`);
    }
    assert.deepEqual([...xoff.keys()].sort(), [1, 2], "the model pauses both feeders at frame 9");
    for (const src of [1, 2]) {
      const f = [xoff.get(src)!];
      assert.equal(f[0].length, PFC_FRAME_LEN);
      assert.ok(same(f[0].subarray(0, 6), PFC_DST) && same(f[0].subarray(6, 12), SWITCH_MAC));
      const d = decodePfc(f[0])!;
      assert.equal(d.vector, 1 << 3, "only priority 3's bit");
      assert.deepEqual(d.quanta, [0, 0, 0, DEFAULT_QUANTA, 0, 0, 0, 0]);
      assert.ok(same(f[0], encodePfc(3, DEFAULT_QUANTA)));
    }
    // The senders honour it on priority 3; priority 0 still flows, to a fast
    // port at once and into the congested port's other queue.
    await sendBurst(rig, 1, [0, 1, 2, 3, 4].map((i) => plainFrame(2, 1, 1000 + i)));
    assert.deepEqual(receive(rig, 2, 5).data.map(seqOf), [1000, 1001, 1002, 1003, 1004]);
    const other = [0, 1, 2].map((i) => plainFrame(SLOW, 1, 2000 + i));
    for (const f of other) model.enqueue(SLOW, f, 1);
    await sendBurst(rig, 1, other);
    const st = await rig.fabric.qosStats();
    assert.equal(st.find((p) => p.port === SLOW)!.prios[3].xoff, true);
    assert.equal(st.find((p) => p.port === 1)!.prios[3].pausedBy, 1);
    // Held past the pause's half-life: the XOFF is refreshed.
    await new Promise((r) => setTimeout(r, pauseNs(DEFAULT_QUANTA, 100) / 1e6 + 50));
    const { events } = await releaseAndCompare(rig, model, 20);
    const xon = events.flatMap((e) => e!.pfc);
    assert.deepEqual(xon, [{ port: 1, prio: 3, quanta: 0 }, { port: 2, prio: 3, quanta: 0 }]);
    await new Promise((r) => setTimeout(r, 20));
    const stats = await rig.fabric.qosStats();
    for (const src of [1, 2]) {
      const pfc = drainPort(rig, src).pfc;
      const xoffs = pfc.filter((f) => decodePfc(f)!.quanta[3] !== 0).length;
      assert.ok(xoffs >= 1, `port ${src}: ${xoffs} XOFF refreshes after the first`);
      assert.deepEqual(pfcSequence(pfc).map((d) => d.quanta[3]), [DEFAULT_QUANTA, 0]);
      const s = stats.find((p) => p.port === src)!.prios[3];
      assert.equal(s.pauseSent, xoffs + 1);
      assert.equal(s.resumeSent, 1);
      assert.equal(s.pfcViolation, 0);
    }
    const s3 = stats.find((p) => p.port === SLOW)!.prios[3];
    assert.equal(s3.queueFull + s3.pfcViolation, 0, "no drop on the PFC priority");
    assert.equal(s3.txFrames, 12);
    // The capture holds every frame received plus every PFC frame sent (outbound), and they decode.
    const after = await rig.fabric.stats();
    const stopped = await rig.fabric.stopCapture();
    const sentPfc = after.pfcSent - before.pfcSent;
    assert.ok(sentPfc >= 4);
    assert.equal(stopped.packets, after.rxFrames - before.rxFrames + sentPfc);
    const cap = readPcapng(await Deno.readFile(capPath));
    const outbound = cap.packets.filter((p) => p.direction === "outbound");
    assert.equal(outbound.length, sentPfc);
    assert.ok(outbound.every((p) => decodePfc(p.data)?.vector === 1 << 3));
    await Deno.remove(capPath);
  }, { queueDepth: 32 });
});

Deno.test("qos (b'): the XON leaves with the frame that brings the queue back to xon, not one later", async () => {
  await withRig("eth", 3, async (rig) => {
    const model = new QosQueuesModel({ queueDepth: 32, maxPorts: 3 });
    const cfg = { pfc: [3], prios: [{ prio: 3, xoff: 8, xon: 4 }] };
    model.configure(SLOW, cfg);
    await learnAll(rig);
    // 10 Mb/s nominal: an XOFF lasts 3.4 s, so no refresh comes in between.
    await rig.fabric.qosSet({ port: SLOW, hold: true, linkMbps: 10, ...cfg });
    const burst = Array.from({ length: 10 }, (_, i) => ipFrame(SLOW, 1, ROCE_DSCP, 0, i, 1500));
    for (const f of burst) model.enqueue(SLOW, f, 1);
    await sendBurst(rig, 1, burst);
    assert.equal(drainPort(rig, 1).pfc.length, 1, "the XOFF");
    let xonAfter = 0;
    for (let k = 1; model.dequeue(SLOW); k++) {
      if (xonAfter === 0 && model.counters(1, 3).resumeSent === 1) xonAfter = k;
    }
    assert.equal(xonAfter, 6, "the model: 10 - 6 = 4 frames left");
    // 1 Mbit/s: a 1500-byte frame every 12 ms, time enough to see which one the XON followed.
    await rig.fabric.qosSet({ port: SLOW, hold: false, drainMbps: 1 });
    const p1 = rig.clients.get(1)!;
    for (;;) {
      const f = p1.recv(5000);
      assert.ok(f, "no XON came");
      if (decodePfc(f)?.quanta[3] === 0) break;
    }
    assert.equal(rig.clients.get(SLOW)!.drain().length, xonAfter, "frames out when the XON came");
  }, { queueDepth: 32 });
});

Deno.test("qos (c): ECN step marks ECT packets that find the threshold queued, CE with a right IPv4 checksum; non-ECT is never marked", async () => {
  await withRig("eth", 3, async (rig) => {
    const model = new QosQueuesModel({ queueDepth: 32, maxPorts: 3 });
    const cfg = { prios: [{ prio: 3, ecn: "step" as const, ecnMin: 4 }] };
    model.configure(SLOW, cfg);
    await learnAll(rig);
    await rig.fabric.qosSet({ port: SLOW, hold: true, ...cfg });
    // q = 3 and q = 4 are ECT: the threshold itself is tested.
    const ecns = [2, 0, 1, 2, 1, 0, 2, 0, 1, 2, 0, 1];
    const burst = ecns.map((e, i) => ipFrame(SLOW, 1, ROCE_DSCP, e, i));
    const marked = burst.map((f) => model.enqueue(SLOW, f, 1).marked);
    assert.deepEqual(marked, ecns.map((e, i) => i >= 4 && e !== 0));
    await sendBurst(rig, 1, burst);
    const { events } = await releaseAndCompare(rig, model, 0);
    for (const [i, e] of events.entries()) {
      const f = e!.frame, tos = f[15];
      assert.equal(tos & 3, marked[i] ? 3 : ecns[i], `frame ${i} ECN field`);
      assert.ok(ipv4ChecksumOk(f), `frame ${i}: IPv4 header checksum`);
    }
    const s = (await rig.fabric.qosStats(SLOW))[0].prios[3];
    assert.equal(s.ecnMarked, marked.filter(Boolean).length);
  }, { queueDepth: 32 });
});

Deno.test("qos (c'): ECN RED marks on its ramp with the seeded draw the model makes", async () => {
  await withRig("eth", 3, async (rig) => {
    const model = new QosQueuesModel({ queueDepth: 32, maxPorts: 3, seed: 7 });
    const cfg = { prios: [{ prio: 3, ecn: "red" as const, ecnMin: 2, ecnMax: 14, ecnProb: 60 }] };
    model.configure(SLOW, cfg);
    await learnAll(rig);
    await rig.fabric.qosSet({ port: SLOW, hold: true, ecnSeed: 7, ...cfg });
    const burst = Array.from({ length: 20 }, (_, i) => ipFrame(SLOW, 1, ROCE_DSCP, 2, i));
    const marked = burst.map((f) => model.enqueue(SLOW, f, 1).marked);
    assert.ok(marked.slice(2, 14).some(Boolean) && !marked.slice(2, 14).every(Boolean));
    await sendBurst(rig, 1, burst);
    await releaseAndCompare(rig, model, 0);
    const s = (await rig.fabric.qosStats(SLOW))[0].prios[3];
    assert.equal(s.ecnMarked, marked.filter(Boolean).length);
  }, { queueDepth: 32 });
});

Deno.test("qos (d): a sender that ignores XOFF overflows the PFC queue: pfc_violation on its port, not queue_full", async () => {
  await withRig("eth", 3, async (rig) => {
    const model = new QosQueuesModel({ queueDepth: 16, maxPorts: 3 });
    const cfg = { pfc: [3], prios: [{ prio: 3, xoff: 8, xon: 4 }] };
    model.configure(SLOW, cfg);
    await learnAll(rig);
    await rig.fabric.qosSet({ port: SLOW, hold: true, ...cfg });
    const burst = Array.from({ length: 30 }, (_, i) => ipFrame(SLOW, 1, ROCE_DSCP, 0, i));
    const outcomes = burst.map((f) => model.enqueue(SLOW, f, 1).outcome);
    await sendBurst(rig, 1, burst);
    const ports = await rig.fabric.ports();
    const p1 = ports.find((p) => p.port === 1)!, p3 = ports.find((p) => p.port === SLOW)!;
    assert.equal(p1.drops.pfc_violation, outcomes.filter((o) => o === "pfc_violation").length);
    assert.equal(p1.drops.pfc_violation, 14);
    assert.equal(p3.drops.queue_full, 0);
    assert.equal(model.counters(1, 3).pfcViolation, 14);
    const s1 = (await rig.fabric.qosStats(1))[0].prios[3];
    assert.equal(s1.pfcViolation, 14);
    assert.ok(s1.pauseSent >= 1, "it had been told to pause");
    await releaseAndCompare(rig, model, 0);
  }, { queueDepth: 16 });
});

Deno.test("qos (e): a host's PFC pauses egress toward it on that priority only, until XON or its quanta run out; PFC is never forwarded", async () => {
  await withRig("eth", 3, async (rig) => {
    await learnAll(rig);
    await rig.fabric.qosSet({ linkMbps: 100 }); // 65535 quanta = 335 ms
    const host = rig.clients.get(SLOW)!;
    const pfcFrom3 = (quanta: number) => encodePfc(3, quanta, Uint8Array.from([2, 0, 0, 0, 0, 3]));
    await sendBurst(rig, SLOW, [pfcFrom3(0xffff)]);
    let s = (await rig.fabric.qosStats(SLOW))[0].prios[3];
    assert.equal(s.paused, true);
    assert.equal(s.pauseReceived, 1);
    // Priority 3 waits, priority 0 (sent after it) overtakes it.
    await sendBurst(rig, 1, [ipFrame(SLOW, 1, ROCE_DSCP, 0, 1), plainFrame(SLOW, 1, 2)]);
    assert.equal(seqOf(host.recv(2000)!), 2);
    assert.equal(host.recv(50), null, "priority 3 is paused");
    await sendBurst(rig, SLOW, [pfcFrom3(0)]);
    assert.equal(seqOf(host.recv(2000)!), 1, "XON releases it");
    s = (await rig.fabric.qosStats(SLOW))[0].prios[3];
    assert.equal(s.resumeReceived, 1);
    assert.ok(s.pauseUs >= 50_000, `paused ${s.pauseUs} us`);
    // Quanta running out end a pause too: 4000 quanta = 20.5 ms at 100 Mb/s.
    await sendBurst(rig, SLOW, [pfcFrom3(4000)]);
    const t0 = performance.now();
    await sendBurst(rig, 1, [ipFrame(SLOW, 1, ROCE_DSCP, 0, 3)]);
    assert.equal(seqOf(host.recv(2000)!), 3);
    assert.ok(performance.now() - t0 >= 10, "held for the pause");
    // PFC frames are link-local; a PAUSE (802.3x) is dropped as mac_control.
    const pause = new Uint8Array(60);
    pause.set([...PFC_DST, 2, 0, 0, 0, 0, 3, 0x88, 0x08, 0x00, 0x01, 0xff, 0xff]);
    await sendBurst(rig, SLOW, [pause]);
    for (const p of [1, 2]) assert.equal(rig.clients.get(p)!.drain().length, 0);
    const p3 = (await rig.fabric.ports()).find((p) => p.port === SLOW)!;
    assert.equal(p3.drops.mac_control, 1);
    assert.equal(rig.model.counters(SLOW).drops.mac_control, 1);
  });
});

Deno.test("qos: qos_set is checked whole, qos_get reads it back, other modes refuse it", async () => {
  await withRig("eth", 1, async (rig) => {
    const c0 = await rig.fabric.qosGet(1);
    assert.equal(c0.linkMbps, 100000);
    assert.equal(c0.pfcQuanta, 0xffff);
    assert.equal(c0.pauseNs, 335539);
    assert.equal(c0.dscpMap[26], 3);
    assert.deepEqual(c0.ports[0].prios[3], {
      prio: 3,
      xoff: 128,
      xon: 64,
      ecn: "off",
      ecnMin: 64,
      ecnMax: 128,
      ecnProb: 100,
    });
    await assert.rejects(
      rig.fabric.qosSet({ port: 1, drainMbps: 5, prios: [{ prio: 3, xoff: 256 }] }),
    );
    assert.equal((await rig.fabric.qosGet(1)).ports[0].drainMbps, 0, "nothing applied");
    assert.equal(await rig.fabric.qosSet({ pfc: [3, 4], dscp: [{ dscp: 46, prio: 5 }] }), 64);
    const c = await rig.fabric.qosGet(1);
    assert.deepEqual(c.ports[0].pfc, [3, 4]);
    assert.equal(c.dscpMap[46], 5);
  });
  await withRig("ib", 0, async (rig) => {
    await assert.rejects(rig.fabric.qosStats(), /eth mode/);
  });
});

/**
 * A real 2→1 incast at a drain rate (no hold): ports 1 and 2 send `n`
 * frames each to port 3 in batches of 8, each batch waited for (so at most
 * 16 frames are in flight), honouring the XOFF/XON they receive when
 * `honour`. Returns what port 3 delivered and the counters.
 */
async function incast(rig: Rig, n: number, honour: boolean) {
  await learnAll(rig);
  const paused = new Map([[1, false], [2, false]]);
  const sent = new Map([[1, 0], [2, 0]]);
  const sock3 = rig.clients.get(SLOW)!;
  let delivered = 0, seq = 0;
  const t0 = performance.now();
  while ([...sent.values()].some((k) => k < n)) {
    for (const src of [1, 2]) {
      for (const f of rig.clients.get(src)!.drain()) {
        const d = decodePfc(f);
        if (d && honour) paused.set(src, d.quanta[3] !== 0);
      }
      if (paused.get(src) || sent.get(src)! >= n) continue;
      const k = Math.min(8, n - sent.get(src)!);
      await sendBurst(
        rig,
        src,
        Array.from({ length: k }, () => ipFrame(SLOW, src, ROCE_DSCP, 0, seq++)),
      );
      sent.set(src, sent.get(src)! + k);
    }
    delivered += sock3.drain().length;
    if ([1, 2].every((s) => paused.get(s) || sent.get(s)! >= n)) {
      await new Promise((r) => setTimeout(r, 1));
    }
  }
  for (;;) {
    const f = sock3.recv(500);
    if (!f) break;
    delivered++;
  }
  const ms = performance.now() - t0;
  const st = await rig.fabric.qosStats();
  const p = (port: number) => st.find((x) => x.port === port)!.prios[3];
  return {
    delivered,
    ms: Math.round(ms),
    queueFull: p(SLOW).queueFull,
    pfcViolation: p(1).pfcViolation + p(2).pfcViolation,
    pauseSent: [p(1).pauseSent, p(2).pauseSent],
    resumeSent: [p(1).resumeSent, p(2).resumeSent],
  };
}

Deno.test("qos incast at 5 Mbit/s: without control the slow port drops; with PFC honoured nothing is lost", async () => {
  const n = 400; // per sender, 200-byte frames: 2 × 400 × 1600 bit at 5 Mbit/s = 256 ms of drain
  const figures: Record<string, unknown> = {};
  await withRig("eth", 3, async (rig) => {
    await rig.fabric.qosSet({ port: SLOW, drainMbps: 5 });
    const r = await incast(rig, n, false);
    figures.noControl = r;
    assert.ok(r.queueFull > 0, "a 5 Mbit/s port behind two senders overflows");
    assert.equal(r.delivered + r.queueFull, 2 * n);
  }, { queueDepth: 64 });
  await withRig("eth", 3, async (rig) => {
    await rig.fabric.qosSet({
      port: SLOW,
      drainMbps: 5,
      linkMbps: 100,
      pfc: [3],
      prios: [{ prio: 3, xoff: 24, xon: 12 }],
    });
    const r = await incast(rig, n, true);
    figures.pfc = r;
    assert.equal(r.queueFull + r.pfcViolation, 0);
    assert.equal(r.delivered, 2 * n);
    assert.ok(r.pauseSent.every((x) => x >= 1) && r.resumeSent.every((x) => x >= 1));
  }, { queueDepth: 64 });
  console.log(JSON.stringify(figures));
});
