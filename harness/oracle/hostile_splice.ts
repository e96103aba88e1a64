/**
 * The scaffold both hostile generators share (vnic_fuzz_ops.ts,
 * gpu_fuzz_ops.ts): a differential generator's operations with hostile
 * bursts spliced in. A subclass plans a burst into `queue`; `next` hands the
 * queued operations out first and falls back to the differential generator.
 * Seeded: the same seed gives the same sequence against the same model.
 */
import { prng, randInt } from "../prng.ts";

/** A generator of operations that reads the model it drives. */
export interface OpGenerator<Op, Model> {
  /** The next operation; `model` has run every operation returned before. */
  next(model: Model): Op;
}

/** Hostile bursts per 100 planned steps; the rest comes from the differential generator. */
export const HOSTILE_PERCENT = 45;

/** A differential generator with hostile bursts spliced in. */
export abstract class HostileSplicer<Op, Model> implements OpGenerator<Op, Model> {
  /** The burst planner's own random stream (apart from the base generator's). */
  protected readonly rng: () => number;
  /** Operations of the burst being handed out. */
  protected readonly queue: Op[] = [];

  /** `salt` keeps the planner's stream apart from the base generator's for one seed. */
  constructor(seed: number, salt: number, private readonly base: OpGenerator<Op, Model>) {
    this.rng = prng(seed ^ salt);
  }

  /** A whole number in lo..hi. */
  protected int(lo: number, hi: number): number {
    return randInt(this.rng, lo, hi);
  }

  /** True with probability `p`. */
  protected chance(p: number): boolean {
    return this.rng() / 0x1_0000_0000 < p;
  }

  /** One of `xs`. */
  protected pick<T>(xs: readonly T[]): T {
    return xs[this.int(0, xs.length - 1)];
  }

  /** Plan one hostile burst into `queue`, given the model's state now. */
  protected abstract plan(model: Model): void;

  /** The next operation; `model` has run every operation returned before. */
  next(model: Model): Op {
    if (this.queue.length === 0 && this.int(0, 99) < HOSTILE_PERCENT) this.plan(model);
    return this.queue.shift() ?? this.base.next(model);
  }
}
