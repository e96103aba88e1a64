/**
 * Which rows of a run run at once. A row shares the cores when its claims
 * hold with other rows running beside it: rows without guests (fresh-host,
 * qtest-*; not `switch`, which declares `alone`), and guest rows declaring
 * `sharesCores` (no rate, latency or time among their claims, and no wait
 * a slower guest could overrun). Every other row runs alone, first, in the
 * order given: nothing runs beside a row that judges timing. Then the
 * sharing rows run longest first by the durations recent runs recorded
 * (unknown ones at their median; the order given without any), each next
 * row starting as soon as one ends: guest rows `jobs` at a time (`--jobs`;
 * default one per two cores), and beside them the rows without guests, one
 * at a time. Each row's report names the rows that ran beside it. Measured
 * on 2 cores under TCG (docs/architecture.md, "The flow of a row"): two
 * guest rows at once made the whole matrix slower, a row without guests
 * beside a guest row faster.
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
  /** Rows that run alone, first, in the order given. */
  alone: LaneRow[];
  /** Rows that share the cores, in the order they start. */
  shared: LaneRow[];
  /** How many shared guest rows run at once (rows without guests: one, beside them). */
  jobs: number;
}

/**
 * The plan for `rows` with `jobs` shared guest rows at once; `durations`
 * (row id to seconds, recent runs') orders the shared rows longest first.
 */
export function planRun(
  rows: Row[],
  jobs: number,
  durations: ReadonlyMap<string, number> = new Map(),
): RunPlan {
  const indexed = rows.map((row, i) => ({ row, i }));
  const shared = indexed.filter(({ row }) => sharesCores(row));
  const known = shared.filter(({ row }) => durations.has(row.id))
    .map(({ row }) => durations.get(row.id)!);
  if (known.length) {
    const guess = median(known);
    const sec = ({ row }: LaneRow) => durations.get(row.id) ?? guess;
    shared.sort((a, b) => sec(b) - sec(a) || a.i - b.i);
  }
  return { alone: indexed.filter(({ row }) => !sharesCores(row)), shared, jobs };
}

/** Rows without guests that run at once, beside the guest rows. */
export const GUESTLESS_LANES = 1;

/**
 * Run `plan`'s rows through `runOne`, which gets each row's index in the
 * run's rows and the indices of the rows running beside it — a set that
 * grows while the row runs, complete once its promise settles. Each shared
 * row starts as soon as there is room for its kind (`plan.jobs` guest rows,
 * {@link GUESTLESS_LANES} rows without guests), the first in `plan.shared`
 * order that fits. After a `runOne` rejects no further row starts; the rows
 * under way end first, then the first rejection is the run's.
 */
export async function runPlan(
  plan: RunPlan,
  runOne: (row: Row, index: number, beside: ReadonlySet<number>) => Promise<void>,
): Promise<void> {
  for (const { row, i } of plan.alone) await runOne(row, i, new Set());
  const queue = [...plan.shared];
  const running = new Map<number, { beside: Set<number>; guests: boolean }>();
  const underWay = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  const hasGuests = (row: Row) => row.needs.guests > 0;
  const fits = (row: Row) => {
    const kind = hasGuests(row);
    const same = [...running.values()].filter((r) => r.guests === kind).length;
    return same < (kind ? Math.max(1, plan.jobs) : GUESTLESS_LANES);
  };
  const start = ({ row, i }: LaneRow) => {
    const beside = new Set(running.keys());
    for (const other of running.values()) other.beside.add(i);
    running.set(i, { beside, guests: hasGuests(row) });
    const done: Promise<void> = runOne(row, i, beside)
      .catch((error) => {
        failure ??= { error };
      })
      .finally(() => {
        running.delete(i);
        underWay.delete(done);
      });
    underWay.add(done);
  };
  for (;;) {
    while (!failure) {
      const k = queue.findIndex(({ row }) => fits(row));
      if (k < 0) break;
      start(queue.splice(k, 1)[0]);
    }
    if (!underWay.size) break;
    await Promise.race(underWay);
  }
  if (failure) throw failure.error;
}
