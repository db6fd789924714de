import { randomUUID } from "node:crypto";
import type { Store } from "../../src/store/store.ts";
import { type Draft, writeEvents } from "../../src/store/writer.ts";
import { type EvaluationSpec, newEvaluation } from "../../streams/evals.ts";
import type { Actor } from "../../streams/event-schema.ts";

export const tester: Actor = { kind: "token", id: "accessor-of-the-test", name: "test" };

/** An evaluation with a random ID (so ID order differs from CreateIndex order). */
export function evaluation(fields: Partial<EvaluationSpec> = {}): EvaluationSpec {
  return newEvaluation({
    ID: randomUUID(),
    Namespace: "default",
    Type: "service",
    TriggeredBy: "job-register",
    JobID: "web",
    CreateTime: 1_700_000_000_000_000_000,
    ...fields,
  });
}

/**
 * Writes `groups` as one EvaluationsUpserted record each, in one append, so
 * CreateIndex advances by one per group. Resolves with the index of the last.
 */
export async function upsertGroups(store: Store, groups: readonly EvaluationSpec[][]): Promise<number> {
  const drafts: Draft[] = groups.map((Evals) => ({ type: "EvaluationsUpserted", v: 1, data: { Evals } }));
  const { index } = await writeEvents(store, Date.now(), tester, drafts);
  return index;
}

/** Splits `evals` into groups of 1, 2, ..., 13, 1, 2, ... so that many records carry many evaluations. */
export function cyclingGroups<T>(evals: readonly T[]): T[][] {
  const groups: T[][] = [];
  for (let i = 0, n = 1; i < evals.length; i += n, n = (n % 13) + 1) groups.push(evals.slice(i, i + n));
  return groups;
}
