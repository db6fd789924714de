import type { EvaluationSpec } from "../../streams/evals.ts";
import { newEvaluation } from "../../streams/evals.ts";
import { compileFilter } from "../query/filter/index.ts";

/** A filter an operator would pass to `nomad eval delete -filter`: three clauses over an evaluation. */
const EXPRESSION = 'Status == "blocked" and Namespace == "default" and Priority == 50';
/** A typical `matches`: anchored, a literal prefix and a class. */
const REGEXP = 'JobID matches "^web-[0-9]+$"';
/** The pattern that once froze the server (exponential under backtracking), on realistic IDs. */
const PATHOLOGICAL = 'ID matches "^(a+)+$"';

export interface FilterFigures {
  matches_per_s: number;
  matched: number;
  regexp_matches_per_s: number;
  regexp_matched: number;
  pathological_regexp_matches_per_s: number;
}

/**
 * How fast one compiled `?filter=` expression decides rows: every list,
 * count and delete-by-filter request runs it once per row it walks.
 */
export function benchFilter(evaluations = 1_000_000): FilterFigures {
  const rows = evaluationRows();
  const clauses = run(EXPRESSION, rows, evaluations);
  const regexp = run(REGEXP, rows, evaluations);
  const pathological = run(PATHOLOGICAL, rows, evaluations);
  return {
    matches_per_s: clauses.per_s,
    matched: clauses.matched,
    regexp_matches_per_s: regexp.per_s,
    regexp_matched: regexp.matched,
    pathological_regexp_matches_per_s: pathological.per_s,
  };
}

/** 64 shapes of the same row: the predicate sees varied values, as in a real table. */
function evaluationRows(): EvaluationSpec[] {
  let seed = 42;
  const hex = (digits: number) => {
    // A fixed LCG, so every run (and the test) sees the same IDs.
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed.toString(16).padStart(8, "0").slice(0, digits);
  };
  return Array.from({ length: 64 }, (_, i) =>
    newEvaluation({
      ID: `${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(8)}${hex(4)}`,
      Namespace: "default",
      Type: "service",
      TriggeredBy: "job-register",
      // Half match `^web-[0-9]+$`; `-canary` fails only at the end.
      JobID: i % 4 === 0 ? `batch-${i}` : i % 4 === 1 ? `web-${i}-canary` : `web-${i}`,
      CreateTime: 0,
      Priority: 40 + (i % 20),
      Status: i % 3 === 0 ? "pending" : "blocked",
    }),
  );
}

function run(expression: string, rows: readonly EvaluationSpec[], evaluations: number) {
  const f = compileFilter(expression);
  for (let i = 0; i < 100_000; i++) f.matches(rows[i & 63]);
  let matched = 0;
  const started = performance.now();
  for (let i = 0; i < evaluations; i++) if (f.matches(rows[i & 63])) matched++;
  const seconds = (performance.now() - started) / 1000;
  return { per_s: Math.round(evaluations / seconds), matched };
}
