/**
 * The seam between the matrix's strategy layer and the fabric daemon.
 */
import type { FabricStarter } from "./matrix/lab.ts";

/** Starts a cnuas-switch for a row (undefined until the switch is wired in). */
export const fabricStarter: FabricStarter | undefined = undefined;
