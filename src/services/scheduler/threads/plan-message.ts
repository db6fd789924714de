import type { AllocRow } from "../../../../projections/allocs.ts";
import type { EvaluationRow } from "../../../../projections/evals.ts";
import type { EvaluationSpec, EvaluationsUpserted } from "../../../../streams/evals.ts";
import type { Cause } from "../../../../streams/event-schema.ts";
import { type EnvelopeCodec, packPlain } from "../../../codec/envelope-codec.ts";
import type { Table } from "../../../store/table.ts";
import type { EncodedDraft, Stamp, Writable } from "../../../store/writer.ts";
import { metricsJson } from "../computed-pass.ts";
import { blockedEvalSpec, evalStatusUpdate, queuedAfter } from "../eval-update.ts";
import { planRecords } from "../plan-applier.ts";
import { allocsOfPlan } from "../plan-queue.ts";
import type { ScheduleOutcome } from "../scheduler-context.ts";
import type { EncodedUpdate, ScheduleOutcomeMessage } from "./messages.ts";

/**
 * The thread's side: a ScheduleOutcome as a message, with the plan's records
 * built and encoded here (PlanIDs drawn from `newID`, as submitPlan draws
 * them), and the evaluation's outcome record as the worker would write it
 * if the evaluation completes with this pass (see updateWritable). The
 * records' bytes share one buffer, returned to be transferred.
 */
export function outcomeMessage(
  outcome: ScheduleOutcome,
  evaluation: EvaluationRow,
  atIndex: number,
  newID: () => string,
  signingKeyID: string | undefined,
  timings: { waitMs: number; computeMs: number },
): { message: ScheduleOutcomeMessage; transfer: ArrayBuffer[] } {
  const t0 = performance.now();
  const { plan } = outcome;
  const noOp = plan.isNoOp() && outcome.followupEvals.length === 0;
  // Every record says which index it was computed at: apply re-checks the nodes against its own.
  const records = noOp ? [] : planRecords(plan, newID, signingKeyID, atIndex);
  const placed: Record<string, string[]> = {};
  for (const p of plan.placements) {
    const ids = placed[p.TaskGroup];
    if (ids) ids.push(p.ID);
    else placed[p.TaskGroup] = [p.ID];
  }
  const failedTGAllocs = metricsJson(outcome.failedTGAllocs);
  const ahead = outcomeAhead(outcome, failedTGAllocs, evaluation, atIndex, placed, newID);
  // msgpackr packs into a buffer it reuses: each record is copied out into one of ours.
  // Built by push from empty: `records.map` of no records gives an array of
  // small integers, and the pushes below then deoptimised this function.
  const packed: Uint8Array[] = [];
  for (const r of records) packed.push(packPlain(r));
  const aheadParts = ahead ? [...(ahead.blocked?.parts ?? []), ...ahead.updated] : [];
  for (const p of aheadParts) packed.push(p);
  const buffer = new ArrayBuffer(packed.reduce((n, p) => n + p.length, 0));
  const views: Uint8Array[] = [];
  let at = 0;
  for (const p of packed) {
    const view = new Uint8Array(buffer, at, p.length);
    view.set(p);
    views.push(view);
    at += p.length;
  }
  const planRecordBytes = views.slice(0, records.length);
  let update: EncodedUpdate | undefined;
  if (ahead) {
    const rest = views.slice(records.length);
    const blockedParts = ahead.blocked ? rest.splice(0, ahead.blocked.parts.length) : [];
    update = {
      updated: rest,
      blocked: ahead.blocked && { id: ahead.blocked.id, parts: blockedParts },
      queued: ahead.queued,
      blockedEval: ahead.blockedEval,
    };
  }
  const message: ScheduleOutcomeMessage = {
    evalID: evaluation.ID,
    atIndex,
    noOp,
    followupEvals: outcome.followupEvals,
    planRecords: planRecordBytes,
    planIDs: records.map((r) => r.PlanID!),
    planAllocs: records.map(allocsOfPlan),
    placed,
    inPlace: plan.inPlace,
    signingKeyID,
    failedTGAllocs,
    queuedAllocs: outcome.queuedAllocs,
    deploymentID: outcome.deploymentID,
    classEligibility: outcome.classEligibility,
    escaped: outcome.escaped,
    desiredTGUpdates: outcome.desiredTGUpdates,
    delayInstead: outcome.delayInstead,
    update,
    timings: { ...timings, encodeMs: performance.now() - t0 },
  };
  return { message, transfer: buffer.byteLength > 0 ? [buffer] : [] };
}

/**
 * The main thread's side: the records submitPlan would write for the same
 * plan (the follow-up evaluations, then the plan's records), with the plan's
 * records left as they came: the write puts the envelope around each one
 * with its stamp (encoded with a nil `data`, its last field, whose place the
 * record's bytes take), byte for byte what codec.encode() gives, without
 * decoding or encoding the plan on this thread.
 */
export function planWritables(
  codec: EnvelopeCodec,
  message: ScheduleOutcomeMessage,
  cause: Cause,
): Writable[] {
  const out: Writable[] = [];
  if (message.followupEvals.length > 0) {
    const data: EvaluationsUpserted = { Evals: message.followupEvals };
    out.push({ type: "EvaluationsUpserted", v: 1, data, cause });
  }
  let shell: { stamp: Stamp; head: Uint8Array } | undefined;
  const headFor = (stamp: Stamp): Uint8Array => {
    if (shell?.stamp !== stamp) {
      const bytes = codec.encode({ type: "AllocsPlanApplied", v: 1, ...stamp, cause, data: null });
      if (bytes[bytes.length - 1] !== 0xc0) throw new Error("the envelope's data is not its last field");
      shell = { stamp, head: bytes.subarray(0, bytes.length - 1) };
    }
    return shell.head;
  };
  message.planRecords.forEach((data, i) => {
    out.push({
      type: "AllocsPlanApplied",
      allocs: message.planAllocs[i] ?? 0,
      encode: (stamp) => {
        const head = headFor(stamp);
        const bytes = new Uint8Array(head.length + data.length);
        bytes.set(head);
        bytes.set(data, head.length);
        return bytes;
      },
    });
  });
  return out;
}

/** submitPlan's reading of what applied: placements of this evaluation now in the table, per task group. */
export function placedByGroup(
  message: ScheduleOutcomeMessage,
  allocs: Table<AllocRow>,
): { progress: boolean; placedByGroup: Record<string, number>; placed: AllocRow[] } {
  const byGroup: Record<string, number> = {};
  const placed: AllocRow[] = [];
  for (const [tg, ids] of Object.entries(message.placed)) {
    for (const id of ids) {
      const a = allocs.get(id);
      if (!a || a.EvalID !== message.evalID) continue;
      byGroup[tg] = (byGroup[tg] ?? 0) + 1;
      placed.push(a);
    }
  }
  return { progress: placed.length > 0, placedByGroup: byGroup, placed };
}

/**
 * The times of records encoded ahead: not an integer, so packed as a
 * float64 (0xcb and 8 bytes) that the main thread finds and replaces with
 * the time of the write.
 */
const SENTINEL = 0.123456789012345;
const SENTINEL_PACKED = packPlain(SENTINEL).slice();

/** `data` packed and cut where SENTINEL's bytes are: `holes` of them exactly, or undefined. */
function cutAtSentinels(data: unknown, holes: number): Uint8Array[] | undefined {
  const bytes = packPlain(data);
  const parts: Uint8Array[] = [];
  let from = 0;
  for (let at = indexOf(bytes, SENTINEL_PACKED, 0); at >= 0; at = indexOf(bytes, SENTINEL_PACKED, from)) {
    parts.push(bytes.subarray(from, at));
    from = at + SENTINEL_PACKED.length;
  }
  parts.push(bytes.subarray(from));
  // Another field holding those bytes: written as usual.
  return parts.length === holes + 1 ? parts : undefined;
}

/**
 * The outcome records of a pass that completes its evaluation, as the
 * worker's setStatus builds them (its blocked evaluation when placements
 * failed, Nomad's CreateBlockedEval), times left as holes.
 */
function outcomeAhead(
  outcome: ScheduleOutcome,
  failedTGAllocs: Readonly<Record<string, unknown>> | null,
  evaluation: EvaluationRow,
  atIndex: number,
  placed: Readonly<Record<string, readonly string[]>>,
  newID: () => string,
):
  | {
      updated: Uint8Array[];
      blocked?: { id: string; parts: Uint8Array[] };
      queued: Record<string, number>;
      blockedEval: string;
    }
  | undefined {
  const failed = failedTGAllocs !== null;
  // Still stuck: the worker re-blocks it and writes nothing.
  if (failed && evaluation.Status === "blocked") return undefined;
  let blocked: { id: string; parts: Uint8Array[] } | undefined;
  if (failed && !outcome.delayInstead) {
    const id = newID();
    const spec = blockedEvalSpec(
      evaluation,
      {
        failedTGAllocs,
        classEligibility: outcome.classEligibility,
        escaped: outcome.escaped,
        snapshotIndex: atIndex,
      },
      id,
      false,
      SENTINEL,
    );
    const parts = cutAtSentinels({ Evals: [spec] } satisfies EvaluationsUpserted, 2);
    if (!parts) return undefined;
    blocked = { id, parts };
  }
  const counts: Record<string, number> = {};
  for (const [tg, ids] of Object.entries(placed)) counts[tg] = ids.length;
  const queued = queuedAfter(outcome.queuedAllocs, counts);
  const updated = evalStatusUpdate(
    evaluation,
    "complete",
    "",
    { deploymentID: outcome.deploymentID, failedTGAllocs, queuedAllocs: queued, snapshotIndex: atIndex },
    blocked?.id,
    0,
    SENTINEL,
  );
  const parts = cutAtSentinels({ Evals: [updated] } satisfies EvaluationsUpserted, 1);
  if (!parts) return undefined;
  return { updated: parts, blocked, queued, blockedEval: updated.BlockedEval };
}

function indexOf(bytes: Uint8Array, part: Uint8Array, from: number): number {
  const first = part[0]!;
  for (
    let i = bytes.indexOf(first, from);
    i >= 0 && i + part.length <= bytes.length;
    i = bytes.indexOf(first, i + 1)
  ) {
    let j = 1;
    while (j < part.length && bytes[i + j] === part[j]) j++;
    if (j === part.length) return i;
  }
  return -1;
}

/**
 * The main thread's side of outcome records encoded ahead: when the
 * worker's records (`blocked`, if any, then `updated`) are the ones the
 * thread expected (the fields a pass's fate or the write can change are
 * checked; the rest are the evaluation's, which the thread was given, and
 * the pass's), their envelopes' bytes with the write's stamp and times,
 * byte for byte what codec.encode() gives; else undefined.
 */
export function outcomeWritables(
  codec: EnvelopeCodec,
  message: ScheduleOutcomeMessage,
  updated: EvaluationSpec,
  blocked: EvaluationSpec | undefined,
): EncodedDraft[] | undefined {
  const u = message.update;
  if (
    !u ||
    updated.ID !== message.evalID ||
    updated.Status !== "complete" ||
    updated.StatusDescription !== "" ||
    updated.BlockedEval !== u.blockedEval ||
    updated.DeploymentID !== message.deploymentID ||
    updated.SnapshotIndex !== message.atIndex ||
    !sameCounts(updated.QueuedAllocations, u.queued)
  )
    return undefined;
  if (blocked) {
    if (
      !u.blocked ||
      blocked.ID !== u.blocked.id ||
      blocked.TriggeredBy !== "queued-allocs" ||
      blocked.SnapshotIndex !== message.atIndex ||
      blocked.CreateTime !== blocked.ModifyTime
    )
      return undefined;
  } else if (u.blocked) return undefined;
  const out: EncodedDraft[] = [];
  if (blocked && u.blocked)
    out.push(evalsWritable(codec, u.blocked.parts, [blocked.CreateTime, blocked.ModifyTime]));
  out.push(evalsWritable(codec, u.updated, [updated.ModifyTime]));
  return out;
}

/** An EvaluationsUpserted record from its `data` in parts, `times` packed between them, in its envelope. */
function evalsWritable(
  codec: EnvelopeCodec,
  parts: readonly Uint8Array[],
  times: readonly number[],
): EncodedDraft {
  return {
    type: "EvaluationsUpserted",
    allocs: 0,
    // A method, not an arrow property: no `__name` call per record under tsx.
    encode(stamp) {
      const packedTimes = times.map(packTime);
      const head = envelopeHead(codec, stamp);
      let length = head.length - 1;
      for (const p of parts) length += p.length;
      for (const t of packedTimes) length += t.length;
      const bytes = new Uint8Array(length);
      bytes.set(head.subarray(0, head.length - 1));
      let at = head.length - 1;
      for (let i = 0; i < parts.length; i++) {
        const p = parts[i]!;
        bytes.set(p, at);
        at += p.length;
        const t = packedTimes[i];
        if (t) {
          bytes.set(t, at);
          at += t.length;
        }
      }
      return bytes;
    },
  };
}

/** The last write's envelope head (its stamp; no cause): the records of one write share it. */
let lastHead: { codec: EnvelopeCodec; stamp: Stamp; head: Uint8Array } | undefined;

/** An EvaluationsUpserted envelope with the stamp, `data` nil (its last byte, where the data goes). */
function envelopeHead(codec: EnvelopeCodec, stamp: Stamp): Uint8Array {
  if (lastHead?.stamp === stamp && lastHead.codec === codec) return lastHead.head;
  // Copied: msgpackr's next pack may reuse the buffer it packed into.
  const head = codec.encode({ type: "EvaluationsUpserted", v: 1, ...stamp, data: null }).slice();
  if (head[head.length - 1] !== 0xc0) throw new Error("the envelope's data is not its last field");
  lastHead = { codec, stamp, head };
  return head;
}

const TWO_32 = 0x1_0000_0000;
const TWO_63 = 2 ** 63;

/**
 * A time as packPlain packs it: a nanosecond time (2^32 to 2^63) is an
 * int64 (wide-integers.ts), written here without a call into msgpackr,
 * which costs more than the bytes; any other number through packPlain.
 */
function packTime(t: number): Uint8Array {
  if (Number.isInteger(t) && t >= TWO_32 && t < TWO_63) {
    const bytes = new Uint8Array(9);
    bytes[0] = 0xd3;
    new DataView(bytes.buffer).setBigInt64(1, BigInt(t));
    return bytes;
  }
  // Copied at once: msgpackr's next pack may reuse the buffer it packed into.
  return packPlain(t).slice();
}

/** Same counts in the same key order (the order the bytes hold them in). */
function sameCounts(
  a: Readonly<Record<string, number>> | null,
  b: Readonly<Record<string, number>>,
): boolean {
  if (!a) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i] || a[ka[i]!] !== b[kb[i]!]) return false;
  return true;
}
