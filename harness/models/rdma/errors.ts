/**
 * Typed errors of the RDMA codecs. Frame decoding never throws for malformed
 * input (it returns errors in the packet); these are thrown by the individual
 * header codecs when called directly with too few bytes, and by encoders given
 * values that do not fit their field.
 */
import { HilError } from "../../errors.ts";

/** Base class of every error the RDMA codecs throw. */
export class RdmaCodecError extends HilError {
  /** Create an error with a message that says what to do. */
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A header decoder was given fewer bytes than the header needs. */
export class TruncatedError extends RdmaCodecError {
  /** `what` needs `needed` bytes but only `available` remain. */
  constructor(readonly what: string, readonly needed: number, readonly available: number) {
    super(
      `${what}: needs ${needed} bytes but only ${Math.max(0, available)} remain; ` +
        `pass the whole frame or decode it with decodeFrame(), which reports truncation instead of throwing`,
    );
  }
}

/** An encoder was given a field value that does not fit the wire field. */
export class FieldRangeError extends RdmaCodecError {
  /** `header.field` got `value`, which does not fit in `bits` bits. */
  constructor(
    readonly header: string,
    readonly field: string,
    readonly value: string,
    readonly bits: number,
  ) {
    super(
      `${header}.${field} = ${value} does not fit its ${bits}-bit field; ` +
        `give a value in [0, 2^${bits}) (or a byte array of ${bits / 8} bytes)`,
    );
  }
}
