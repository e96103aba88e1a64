/** issue 19's figures from a matrix run, and the driver-edit bench's one-line edit. */
import assert from "node:assert/strict";
import { EDITED_FILE, editOneLine, matrixFigures } from "../../harness/bench/matrix.ts";
import type { RowResult } from "../../harness/report/schema.ts";

const row = (id: string, sec: number, starts: ("cold" | "snapshot")[], status = "PASS") =>
  ({
    id,
    title: id,
    status,
    durationSec: sec,
    startedAt: "",
    measurements: {},
    artifacts: [],
    steps: [],
    ...(starts.length
      ? { guests: starts.map((s, i) => ({ name: `g${i}`, start: s, startToSshSec: 3 })) }
      : {}),
  }) as RowResult;

Deno.test("a matrix run's figures: rows, row time, cold boots and restores, per row", () => {
  const f = matrixFigures([
    row("switch", 5, []),
    row("boot", 17.04, ["cold", "cold"]),
    { ...row("roce-e2e", 120, ["snapshot", "snapshot"], "FAIL"), ranBeside: ["qtest-vnic"] },
  ]);
  assert.equal(f.rowsAlone.value, 2);
  assert.equal(f.rows.value, 3);
  assert.equal(f.rowsNotPassed.value, 1);
  assert.equal(f.rowSec.value, 142);
  assert.equal(f.guestBoots.value, 2);
  assert.equal(f.guestRestores.value, 2);
  assert.equal(f["row.boot.sec"].value, 17);
});

Deno.test("the driver edit changes exactly one comment line", () => {
  const src = "// SPDX\n/*\n * cnuas_net: driver.\n *\n * more\n */\nint x;\n";
  const out = editOneLine(src, "(bench 1)");
  const a = src.split("\n");
  const b = out.split("\n");
  assert.equal(a.length, b.length);
  assert.deepEqual(b.filter((l, i) => l !== a[i]), [" * cnuas_net: driver. (bench 1)"]);
  assert.throws(() => editOneLine("int x;\n", "m"), new RegExp(EDITED_FILE));
});
