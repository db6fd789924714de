import type { KeyObject } from "node:crypto";
import type { EvaluationRow } from "../../../../projections/evals.ts";
import type { EvaluationSpec } from "../../../../streams/evals.ts";
import type { DesiredUpdates } from "../reconciler.ts";
import type { PackedRecords } from "./record-batch.ts";

/** What a scheduler thread is started with (its workerData). */
export interface ThreadData {
  /** The main store's applied index when the thread was started: the newest snapshot it may load. */
  readonly startIndex: number;
  /** The main store's snapshot directory, if it keeps one. */
  readonly snapshotDir?: string;
  /** The tables the replica must hold (and every projection they depend on). */
  readonly tables: readonly string[];
  readonly logLevel: string;
  readonly name: string;
  /** The thread's nice value (Linux, where it is per thread; 0: the main thread's). See SchedulerThreadsOptions.nice. */
  readonly nice?: number;
}

/** One evaluation to compute, as the main thread's worker would compute it in process. */
export interface ScheduleRequest {
  /** The evaluation as the worker schedules it (an unblocked one carries its class eligibility). */
  readonly evaluation: EvaluationRow;
  /** The replica must have applied at least this index (the plan applier's RefreshIndex after a partial plan). */
  readonly minIndex: number;
  /** The main thread's clock: the time the scheduler decides with. */
  readonly nowMs: number;
  /** Retries of one evaluation draw a different node order. */
  readonly attempt: number;
  /** The active root key the plan's allocations are stamped with (PlanIdentities.signingKey). */
  readonly signingKeyID?: string;
}

/** A schedule request and the id its outcome answers to. */
export interface ScheduleItem {
  readonly id: number;
  readonly request: ScheduleRequest;
}

/**
 * What one pass of the scheduler decided, as plain data: the same fields as
 * ScheduleOutcome, with the plan already turned into its records (their
 * `data`, msgpack-encoded as the codec writes it inside the envelope), so
 * the main thread neither clones nor encodes anything per allocation.
 */
export interface ScheduleOutcomeMessage {
  readonly evalID: string;
  /** The replica's applied index the plan was computed at: every table read was as of this index. */
  readonly atIndex: number;
  /** Nothing to write: a no-op plan and no follow-up evaluation. */
  readonly noOp: boolean;
  readonly followupEvals: readonly EvaluationSpec[];
  /** AllocsPlanApplied records of the plan (empty when noOp), each its `data` in plain msgpack. */
  readonly planRecords: readonly Uint8Array[];
  /** The PlanID of each record, in order (where the apply's refusals are kept). */
  readonly planIDs: readonly string[];
  /** The allocations each record changes (the plan queue's budget). */
  readonly planAllocs: readonly number[];
  /** IDs of the allocations placed, per task group. */
  readonly placed: Readonly<Record<string, readonly string[]>>;
  /** Allocations updated in place. */
  readonly inPlace: readonly string[];
  /** The key the records stamp on what they place or update in place (the request's). */
  readonly signingKeyID: string | undefined;
  /** AllocMetric.toJSON() per task group that could not be placed. */
  readonly failedTGAllocs: Readonly<Record<string, unknown>> | null;
  readonly queuedAllocs: Readonly<Record<string, number>>;
  readonly deploymentID: string;
  /** A Map across the thread boundary: see Feasibility.classEligibility. */
  readonly classEligibility: ReadonlyMap<string, boolean>;
  readonly escaped: boolean;
  readonly desiredTGUpdates: Readonly<Record<string, DesiredUpdates>>;
  readonly delayInstead: boolean;
  /**
   * The evaluation's outcome records as the worker writes them when the
   * evaluation completes with this pass, every placement applied: its
   * blocked evaluation, if it spawns one, then the update (see
   * updateWritable), their `data` in plain msgpack cut around the times
   * known only at the write.
   */
  readonly update?: EncodedUpdate;
  /** Where the time went in the thread (ms): waiting for minIndex, the scheduler, encoding the records. */
  readonly timings: { readonly waitMs: number; readonly computeMs: number; readonly encodeMs: number };
}

export interface EncodedUpdate {
  /** `{ Evals: [updated] }` in parts, ModifyTime's value between them. */
  readonly updated: readonly Uint8Array[];
  /** `{ Evals: [blocked] }` in parts, its CreateTime and ModifyTime between them; with its ID. */
  readonly blocked?: { readonly id: string; readonly parts: readonly Uint8Array[] };
  readonly queued: Readonly<Record<string, number>>;
  readonly blockedEval: string;
}

/** The outcome of one schedule request, or why it has none. */
export type Answer =
  | { readonly id: number; readonly outcome: ScheduleOutcomeMessage; readonly error?: undefined }
  | { readonly id: number; readonly error: string };

/** What a replica reports about itself. */
export interface ReplicaStats {
  readonly appliedIndex: number;
  /** The thread's V8 heap in use (bytes): the replica's tables and the scheduler's working set. */
  readonly heapUsed: number;
  readonly rows: Readonly<Record<string, number>>;
  /** How the replica started: the snapshot it loaded (0: none) and how long catching up took (ms). */
  readonly startup: StartupFigures;
  /** Records applied as they were forwarded (after the start), and the thread's time applying them (ms). */
  readonly applying: { readonly records: number; readonly ms: number };
  /** The thread's nice value as the system reports it (0 where it is not set per thread). */
  readonly nice?: number;
}

export interface StartupFigures {
  readonly snapshotIndex: number;
  /** Loading the snapshot (reading, checking, decoding the replica's tables). */
  readonly snapshotMs: number;
  /** Applying the records after the snapshot up to the start index. */
  readonly replayMs: number;
  readonly replayed: number;
}

export type ToThread =
  /** Records to apply; then, if any, the schedule requests of the same turn (one wake-up for both). */
  | ({ readonly kind: "records"; readonly schedule?: readonly ScheduleItem[] } & PackedRecords)
  | { readonly kind: "live"; readonly from: number }
  /** The schedule requests of one turn, computed in order (each answered before the next starts). */
  | { readonly kind: "schedule"; readonly items: readonly ScheduleItem[] }
  | { readonly kind: "hash"; readonly id: number; readonly minIndex: number }
  /** JWS signing inputs of workload identities, to sign with `key` (see identity-signer.ts). */
  | {
      readonly kind: "sign";
      readonly id: number;
      readonly key: KeyObject;
      readonly inputs: readonly string[];
    }
  /** `gc`: collect garbage first, so the heap figure is what the replica holds (measurements only). */
  | { readonly kind: "stats"; readonly id: number; readonly gc?: boolean };

export type FromThread =
  /** Send records from `from` on (the snapshot the replica loaded ends just before). */
  | { readonly kind: "follow"; readonly from: number }
  /** While catching up: the next run of records, please. */
  | { readonly kind: "more" }
  | { readonly kind: "ready"; readonly index: number; readonly startup: StartupFigures }
  /** Outcomes of schedule requests (or why one failed), in the order they were computed. */
  | { readonly kind: "answers"; readonly answers: readonly Answer[] }
  | { readonly kind: "hash"; readonly id: number; readonly index: number; readonly hash: string }
  | { readonly kind: "stats"; readonly id: number; readonly stats: ReplicaStats }
  /** The base64url signatures of a `sign` request's inputs, in order. */
  | { readonly kind: "signed"; readonly id: number; readonly signatures: readonly string[] }
  | { readonly kind: "failed"; readonly id: number; readonly error: string }
  /** The replica cannot go on (a record it cannot apply): its thread is to be replaced. */
  | { readonly kind: "fatal"; readonly error: string };
