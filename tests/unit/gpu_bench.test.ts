import assert from "node:assert/strict";
import { parseBenchLines } from "../../harness/bench/gpu.ts";

Deno.test("parseBenchLines keeps each bench line's name, value and unit", () => {
  const got = parseBenchLines(
    "bench gpuCopyToDevIoctlMiBPerSec4KiB 812.25 MiB/s\n" +
      "bench gpuLinkFramesPerSec64B 1500.00 frames/s\n",
  );
  assert.deepEqual(got, {
    gpuCopyToDevIoctlMiBPerSec4KiB: { value: 812.25, unit: "MiB/s" },
    gpuLinkFramesPerSec64B: { value: 1500, unit: "frames/s" },
  });
});

Deno.test("parseBenchLines ignores key=value, failure and malformed lines", () => {
  const got = parseBenchLines(
    "recv_frames=12\nFAIL frame 3: 64 bytes\nbench broken\nbench x 1.0\nbench y nan MiB/s\n",
  );
  assert.deepEqual(got, {});
});
