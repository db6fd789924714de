import type { AllocRow } from "../../../../projections/allocs.ts";
import type { EvaluationsUpserted } from "../../../../streams/evals.ts";
import type { Cause } from "../../../../streams/event-schema.ts";
import { type EnvelopeCodec, packPlain } from "../../../codec/envelope-codec.ts";
import type { Table } from "../../../store/table.ts";
import type { Stamp, Writable } from "../../../store/writer.ts";
import { metricsJson } from "../computed-pass.ts";
import { planRecords } from "../plan-applier.ts";
import { allocsOfPlan } from "../plan-queue.ts";
import type { ScheduleOutcome } from "../scheduler-context.ts";
import type { ScheduleOutcomeMessage } from "./messages.ts";

/**
 * The thread's side: a ScheduleOutcome as a message, with the plan's records
 * built and encoded here (PlanIDs drawn from `newID`, as submitPlan draws
 * them). The records' bytes share one buffer, returned to be transferred.
 */
export function outcomeMessage(
  outcome: ScheduleOutcome,
  evalID: string,
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
  // msgpackr packs into a buffer it reuses: each record is copied out into one of ours.
  const packed = records.map((r) => packPlain(r));
  const buffer = new ArrayBuffer(packed.reduce((n, p) => n + p.length, 0));
  const planRecordBytes: Uint8Array[] = [];
  let at = 0;
  for (const p of packed) {
    const view = new Uint8Array(buffer, at, p.length);
    view.set(p);
    planRecordBytes.push(view);
    at += p.length;
  }
  const placed: Record<string, string[]> = {};
  for (const p of plan.placements) {
    const ids = placed[p.TaskGroup];
    if (ids) ids.push(p.ID);
    else placed[p.TaskGroup] = [p.ID];
  }
  const message: ScheduleOutcomeMessage = {
    evalID,
    atIndex,
    noOp,
    followupEvals: outcome.followupEvals,
    planRecords: planRecordBytes,
    planIDs: records.map((r) => r.PlanID!),
    planAllocs: records.map(allocsOfPlan),
    placed,
    inPlace: plan.inPlace,
    signingKeyID,
    failedTGAllocs: metricsJson(outcome.failedTGAllocs),
    queuedAllocs: outcome.queuedAllocs,
    deploymentID: outcome.deploymentID,
    classEligibility: outcome.classEligibility,
    escaped: outcome.escaped,
    desiredTGUpdates: outcome.desiredTGUpdates,
    delayInstead: outcome.delayInstead,
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
