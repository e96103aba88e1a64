/**
 * Reference model of cnuasgpu_host.ko as the guest op runner
 * (drivers/test/cnuasgpu_host_ops.c) sees it, written from issue 15,
 * drivers/gpu/uapi/cnuasgpu.h, uapi/cnuasgpu_host.h and docs/devices.md
 * (cnuasgpu_host.ko) — never from the module's C. One model is one load of
 * the module (its parameters: `GpuHostConfig`) driven by one runner process.
 *
 * What it covers: the arena's page-aligned bump allocator and the lifetime of
 * reservations (handle, mapping, DMA-BUF fd or import, queued op), the bytes
 * of every allocation, pin and runner buffer, pinned accounting against the
 * ceiling, the per-file handle namespace (numbers are not predicted, only
 * that a new one is non-zero and not live), queue depth, batch limits, slots
 * and sequence numbers, the feature switches (EOPNOTSUPP before anything
 * else) and the documented errno order: the command's size bits (ENOTTY),
 * feature, reading the argument (EFAULT), the argument's own fields
 * (EINVAL), handles (ENOENT), ranges against what they name (EINVAL),
 * resources (ENOMEM, EAGAIN). Timing the model cannot see (how far each
 * file's worker has got) is handled as `GpuHostCore` describes.
 *
 * @example
 * ```ts
 * const m = new GpuHostModel(GPU_HOST_DEFAULTS);
 * m.step({ op: "open", f: 0, node: 0 }, "ok"); // null: allowed
 * m.step({ op: "alloc", f: 0, size: 5000n, align: 0n, out: 1 }, "ok handle=1 offset=0 size=8192");
 * ```
 */
import { GpuHostCore } from "./gpu_host_core.ts";
import { errno, type Expect, okFields, SKIP } from "./gpu_host_expect.ts";
import {
  allocExpect,
  capsExpect,
  copyExpect,
  freeExpect,
  hbufExpect,
  infoExpect,
  mapUseExpect,
  mmapExpect,
} from "./gpu_host_mem_ops.ts";
import { type HostOp, parseAnswer } from "./gpu_host_ops.ts";
import {
  badcmdExpect,
  eventsExpect,
  pollExpect,
  statExpect,
  submitExpect,
  waitExpect,
} from "./gpu_host_queue_ops.ts";
import {
  closefdExpect,
  exportExpect,
  importExpect,
  pinBadExpect,
  pinBufExpect,
  pinExpect,
  unpinExpect,
} from "./gpu_host_share_ops.ts";
import { FileState } from "./gpu_host_state.ts";

export { GPU_HOST_DEFAULTS, type GpuHostConfig, moduleParams } from "./gpu_host_state.ts";

/** The cnuasgpu_host reference model. */
export class GpuHostModel extends GpuHostCore {
  /**
   * Check the runner's answer `line` to `op` and follow it. Returns null when
   * the answer is one the device may give, else what the model wanted (the
   * state is then left as it was).
   */
  step(op: HostOp, line: string): string | null {
    const e = this.expect(op);
    const a = parseAnswer(line);
    const bad = e.check(a);
    if (bad !== null) return bad;
    e.then?.(a);
    return null;
  }

  /** Follow an answer the device may give to `op` and return it (the generator's model). */
  nominal(op: HostOp): string {
    const e = this.expect(op);
    e.then?.(parseAnswer(e.nominal));
    return e.nominal;
  }

  /** What the model expects of the answer to `op` (no state changes). */
  expect(op: HostOp): Expect {
    switch (op.op) {
      case "open":
        return this.openExpect(op.f, op.node);
      case "close":
        return this.closeExpect(op.f);
      case "caps":
        return capsExpect(this, op);
      case "info":
        return infoExpect(this, op);
      case "alloc":
        return allocExpect(this, op);
      case "free":
        return freeExpect(this, op);
      case "copy_to":
      case "copy_from":
        return copyExpect(this, op);
      case "export":
        return exportExpect(this, op);
      case "closefd":
        return closefdExpect(this, op);
      case "import":
        return importExpect(this, op);
      case "mmap":
        return mmapExpect(this, op);
      case "munmap":
      case "mwrite":
      case "mread":
        return mapUseExpect(this, op);
      case "pin":
        return pinExpect(this, op);
      case "pinbad":
        return pinBadExpect(this, op);
      case "unpin":
        return unpinExpect(this, op);
      case "pwrite":
      case "pread":
        return pinBufExpect(this, op);
      case "hwrite":
      case "hread":
        return hbufExpect(this, op);
      case "submit":
        return submitExpect(this, op);
      case "poll":
        return pollExpect(this, op);
      case "wait":
        return waitExpect(this, op);
      case "events":
        return eventsExpect(this, op);
      case "stat":
        return statExpect(this, op);
      case "badcmd":
        return badcmdExpect(this, op);
    }
  }

  private openExpect(f: number, node: number): Expect {
    if (this.file(f)) return SKIP;
    if (!this.nodes[node]) return errno("ENOENT");
    return okFields({}, () => {
      const file = new FileState(f, this.nodes[node]);
      this.slots[f] = file;
      this.live.push(file);
    });
  }

  private closeExpect(f: number): Expect {
    const file = this.file(f);
    if (!file) return SKIP;
    return okFields({}, () => {
      file.fdOpen = false;
      for (const s of this.syms.values()) if (s.file === file) s.live = false;
      this.maybeRelease(file);
    });
  }
}
