/**
 * The order a run's rows take. Rows with guests run one after another, in
 * the order given: a 2-core runner hosts one row's guests at a time. Rows
 * without guests (fresh-host, qtest-*; not `switch`, which declares `alone`)
 * form a second lane that runs beside the first guest row declaring
 * `sharesCores` (a row whose claims hold on shared cores: no rate, latency
 * or time among them); every later guest row without it waits until that
 * lane is done, so rows that judge timing have the cores to themselves.
 * With no such row, the guest-less lane runs first. Measured on 2 cores
 * under TCG (docs/architecture.md): the guest-less rows beside `packages`
 * take 168 s where the two ran 266 s one after the other.
 */
import type { Row } from "./row.ts";

/**
 * A row runs in the guest-less lane when it has no guests and does not ask
 * for the cores to itself (`alone`); else in the guest lane.
 */
export function guestless(row: Row): boolean {
  return row.needs.guests === 0 && !row.alone;
}

/** A row with its index in the run's rows. */
export interface LaneRow {
  row: Row;
  i: number;
}

/** The two lanes of `rows`, and the guest row the guest-less lane starts beside (none: first). */
export function planLanes(rows: Row[]): { side: LaneRow[]; main: LaneRow[]; beside?: Row } {
  const indexed = rows.map((row, i) => ({ row, i }));
  const main = indexed.filter(({ row }) => !guestless(row));
  return {
    side: indexed.filter(({ row }) => guestless(row)),
    main,
    beside: main.find(({ row }) => row.sharesCores)?.row,
  };
}

/**
 * Run `rows` through `runOne` in two lanes as above; `runOne` gets each
 * row's index in `rows`. Resolves when every row has run.
 */
export async function runInLanes(
  rows: Row[],
  runOne: (row: Row, index: number) => Promise<void>,
): Promise<void> {
  const { side, main, beside } = planLanes(rows);
  let sideLane: Promise<void> | undefined;
  const startSide = () => {
    if (!sideLane) {
      sideLane = (async () => {
        for (const { row, i } of side) await runOne(row, i);
      })();
      // awaited later; until then a failure must not count as unhandled
      sideLane.catch(() => {});
    }
    return sideLane;
  };
  if (!beside) await startSide();
  try {
    for (const { row, i } of main) {
      if (row.sharesCores) startSide();
      else if (sideLane) await sideLane;
      await runOne(row, i);
    }
  } catch (e) {
    // the guest lane's failure is the run's; a side lane under way ends first
    await sideLane?.catch(() => {});
    throw e;
  }
  await startSide();
}
