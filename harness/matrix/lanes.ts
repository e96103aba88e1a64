/**
 * Which rows of a run run at once. A row shares the cores when its claims
 * hold with other rows running beside it: rows without guests (fresh-host,
 * qtest-*; not `switch`, which declares `alone`), and guest rows declaring
 * `sharesCores` (no rate, latency or time among their claims, and no wait
 * a slower guest could overrun). Every other row runs alone, first, in the
 * order given: no other row's work of normal priority runs beside a row
 * that judges timing. Rows declaring `background` (fresh-host: host
 * commands only, at idle CPU and I/O priority) start with the run and fill
 * the cycles the rows running alone leave idle. Then the sharing rows run
 * `jobs` at a time (`--jobs`; default: the host's cores, 2 to 4; a
 * background row still running holds one of them), and rows declaring
 * `filler` (qtest-fuzz: a latency-bound qtest peer, at idle priority)
 * start beside them without a slot, in the cycles they leave idle. The
 * sharing rows start longest first by the
 * durations earlier runs recorded (run.ts: the local reports', then the
 * cache's; unknown ones at their median; the order given without any), each
 * next row starting as soon as one ends, so the run ends with its short
 * rows. Each row's report names the rows that ran beside it. Measured on 2
 * cores under TCG: docs/architecture.md, "The flow of a row".
 */
import { median } from "../stats.ts";
import type { Row } from "./row.ts";

/**
 * Whether `row` may run beside other rows: a guest-less row unless it asks
 * to be `alone`, a guest row when it declares `sharesCores`.
 */
export function sharesCores(row: Row): boolean {
  return row.needs.guests === 0 ? row.alone === undefined : row.sharesCores !== undefined;
}

/** A row with its index in the run's rows. */
export interface LaneRow {
  row: Row;
  i: number;
}

/** How a run's rows are run. */
export interface RunPlan {
  /** Rows that start with the run, beside the rows that run alone (`background`). */
  background: LaneRow[];
  /** Rows that run alone, first, in the order given. */
  alone: LaneRow[];
  /** Rows that share the cores, in the order they start. */
  shared: LaneRow[];
  /** Rows that start with the sharing rows, at idle priority, holding no slot (`filler`). */
  filler: LaneRow[];
  /** How many rows run at once once the sharing rows start (background ones included). */
  jobs: number;
}

/**
 * The plan for `rows` with `jobs` shared rows at once; `durations` (row id
 * to seconds, the previous run's) orders the shared rows longest first.
 * With `jobs` 1 nothing runs in the background: every row runs by itself.
 */
export function planRun(
  rows: Row[],
  jobs: number,
  durations: ReadonlyMap<string, number> = new Map(),
): RunPlan {
  const indexed = rows.map((row, i) => ({ row, i }));
  const sharing = indexed.filter(({ row }) => sharesCores(row));
  const inBackground = ({ row }: LaneRow) => jobs > 1 && row.background !== undefined;
  const isFiller = ({ row }: LaneRow) => jobs > 1 && row.filler !== undefined;
  const shared = sharing.filter((r) => !inBackground(r) && !isFiller(r));
  const known = shared.filter(({ row }) => durations.has(row.id))
    .map(({ row }) => durations.get(row.id)!);
  if (known.length) {
    const guess = median(known);
    const sec = ({ row }: LaneRow) => durations.get(row.id) ?? guess;
    shared.sort((a, b) => sec(b) - sec(a) || a.i - b.i);
  }
  return {
    background: sharing.filter(inBackground),
    filler: sharing.filter((r) => !inBackground(r) && isFiller(r)),
    alone: indexed.filter(({ row }) => !sharesCores(row)),
    shared,
    jobs,
  };
}

/**
 * Run `plan`'s rows through `runOne`, which gets each row's index in the
 * run's rows and the indices of the rows running beside it — a set that
 * grows while the row runs, complete once its promise settles. The
 * background rows start at once, the rows that run alone one after the
 * other beside them, then the sharing rows `jobs` at a time, a background
 * row still running holding one slot until it ends, and the filler rows
 * beside them, holding none. After a `runOne`
 * rejects no further row starts; the rows under way end first, then the
 * first rejection is the run's.
 */
export async function runPlan(
  plan: RunPlan,
  runOne: (row: Row, index: number, beside: ReadonlySet<number>) => Promise<void>,
): Promise<void> {
  const running = new Map<number, Set<number>>();
  let failure: { error: unknown } | undefined;
  const track = async ({ row, i }: LaneRow) => {
    const beside = new Set(running.keys());
    for (const other of running.values()) other.add(i);
    running.set(i, beside);
    try {
      await runOne(row, i, beside);
    } catch (error) {
      failure ??= { error };
    } finally {
      running.delete(i);
    }
  };
  const queue = [...plan.shared];
  const worker = async () => {
    while (!failure && queue.length) await track(queue.shift()!);
  };
  const workers: Promise<void>[] = [];
  let sharing = false;
  // counted down and checked in one callback: a background row that ends
  // once the sharing rows run hands its slot on, one that ended before holds none
  let held = plan.background.length;
  const background = plan.background.map((r) =>
    track(r).then(() => {
      held--;
      if (sharing) workers.push(worker());
    })
  );
  for (const r of plan.alone) {
    if (failure) break;
    await track(r);
  }
  sharing = true;
  const fillers = failure ? [] : plan.filler.map(track);
  const free = Math.min(Math.max(1, plan.jobs) - held, queue.length);
  for (let k = 0; k < free; k++) workers.push(worker());
  await Promise.all(fillers);
  await Promise.all(background);
  await Promise.all(workers);
  if (failure) throw failure.error;
}
