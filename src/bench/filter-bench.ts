import { newEvaluation } from "../../streams/evals.ts";
import { compileFilter } from "../query/filter/index.ts";

/** A filter an operator would pass to `nomad eval delete -filter`: three clauses over an evaluation. */
const EXPRESSION = 'Status == "blocked" and Namespace == "default" and Priority == 50';

/**
 * How fast one compiled `?filter=` expression decides rows: every list,
 * count and delete-by-filter request runs it once per row it walks.
 */
export function benchFilter(evaluations = 1_000_000): { matches_per_s: number; matched: number } {
  const f = compileFilter(EXPRESSION);
  // 64 shapes of the same row: the predicate sees varied values, as in a real table.
  const rows = Array.from({ length: 64 }, (_, i) =>
    newEvaluation({
      ID: `eval-${i}`,
      Namespace: "default",
      Type: "service",
      TriggeredBy: "job-register",
      JobID: `job-${i}`,
      CreateTime: 0,
      Priority: 40 + (i % 20),
      Status: i % 3 === 0 ? "pending" : "blocked",
    }),
  );
  for (let i = 0; i < 100_000; i++) f.matches(rows[i & 63]);
  let matched = 0;
  const started = performance.now();
  for (let i = 0; i < evaluations; i++) if (f.matches(rows[i & 63])) matched++;
  const seconds = (performance.now() - started) / 1000;
  return { matches_per_s: Math.round(evaluations / seconds), matched };
}
