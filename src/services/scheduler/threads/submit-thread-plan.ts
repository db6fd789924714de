import type { AllocRow } from "../../../../projections/allocs.ts";
import type { Projections } from "../../../../projections/index.ts";
import type { EnvelopeCodec } from "../../../codec/envelope-codec.ts";
import type { PlanIdentities } from "../../../identity/plan-identities.ts";
import type { Writable, Written } from "../../../store/writer.ts";
import { type PlanResult, planCause } from "../plan-applier.ts";
import type { ScheduleOutcomeMessage } from "./messages.ts";
import { placedByGroup, planWritables } from "./plan-message.ts";

/**
 * submitPlan for a plan computed on a scheduler thread: the same records,
 * appended without decoding or encoding the plan, and the same reading of
 * what the second check at apply let through.
 */
export async function submitThreadPlan(
  write: (records: readonly Writable[]) => Promise<Written>,
  codec: EnvelopeCodec,
  tables: Projections["tables"],
  message: ScheduleOutcomeMessage,
  identities?: PlanIdentities,
): Promise<PlanResult> {
  const written = await write(planWritables(codec, message, planCause(tables, message.evalID)));
  let fullCommit = written.outcomes.every((o) => o.status === "applied");
  const refusedNodes: string[] = [];
  for (const id of message.planIDs) {
    const refusal = tables.planRefusals.get(id);
    if (!refusal) continue;
    fullCommit = false;
    for (const n of refusal.Nodes) refusedNodes.push(n.NodeID);
  }
  const placed = placedByGroup(message, tables.allocs);
  const key = message.signingKeyID;
  if (identities && key !== undefined) {
    const signed: AllocRow[] = placed.placed.filter((a) => a.SigningKeyID === key);
    for (const id of message.inPlace) {
      const a = tables.allocs.get(id);
      if (a?.EvalID === message.evalID && a.SigningKeyID === key) signed.push(a);
    }
    await identities.sign(signed);
  }
  return {
    fullCommit,
    progress: placed.progress,
    placedByGroup: placed.placedByGroup,
    refusedNodes,
    index: written.index,
  };
}
