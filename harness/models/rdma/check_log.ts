/**
 * The checker's violation log: rule names, the violation record, and the one
 * place that counts and keeps them, so the frame rules, the request flows and
 * the response pairing all report the same way.
 */

/** Rule names a violation can carry. */
export type RuleId =
  | "decode"
  | "icrc"
  | "vcrc"
  | "ipv4-checksum"
  | "udp-port"
  | "transport"
  | "pad-count"
  | "payload-mtu"
  | "opcode-sequence"
  | "psn-order"
  | "ack-coverage"
  | "ack-psn"
  | "read-response"
  | "atomic-response"
  | "write-length"
  | "management"
  | "deth"
  | "qp-service"
  | "multicast"
  | "mad-pairing"
  | "smp-semantics"
  | "sa-semantics"
  | "pma-semantics"
  | "cnp"
  | "pfc";

/** One broken rule. */
export interface Violation {
  /** Index of the offending frame in the capture (0-based). */
  frameIndex: number;
  /** Human-readable flow, e.g. `10.0.0.1 → 10.0.0.2 QP 0x000012 (RC requests)`. */
  flow: string;
  /** The rule broken. */
  rule: RuleId;
  /** What was wrong, in words. */
  message: string;
}

/** Counts every violation reported and keeps the first `maxKept`. */
export class ViolationLog {
  /** The violations kept, in the order reported. */
  readonly violations: Violation[] = [];
  /** Violation counts by rule (kept or not). */
  readonly byRule: Partial<Record<RuleId, number>> = {};
  /** All violations reported, including those not kept. */
  count = 0;

  /** A log that keeps at most `maxKept` violations (a capture can break millions of times). */
  constructor(private readonly maxKept: number) {}

  /** Record that frame `frameIndex` of `flow` broke `rule`. */
  report(frameIndex: number, flow: string, rule: RuleId, message: string): void {
    this.count++;
    this.byRule[rule] = (this.byRule[rule] ?? 0) + 1;
    if (this.violations.length < this.maxKept) {
      this.violations.push({ frameIndex, flow, rule, message });
    }
  }
}
