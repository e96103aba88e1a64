/**
 * The seam between the matrix's strategy layer and the fabric daemon.
 */
import { startFabric } from "./fabric.ts";
import type { FabricStarter } from "./matrix/lab.ts";

/** Starts a cnuas-switch for a row; `close()` returns its log and captures. */
export const fabricStarter: FabricStarter = startFabric;
