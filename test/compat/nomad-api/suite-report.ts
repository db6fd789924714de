import { type CaseResult, type ExpectedFailures, judgeResults, staleNames, tally } from "../expectations.ts";

/** One top-level Go test of the suite and how it ended. */
export interface TestOutcome {
  readonly name: string;
  readonly result: "pass" | "fail" | "skip";
  /** What the test printed (its first lines), to show why it failed. */
  readonly output: string;
}

const PAST = { pass: "passed", fail: "failed", skip: "skipped" } as const;

export interface SuiteReport {
  readonly ok: boolean;
  readonly text: string;
}

/** The last lines a failing test printed: where Go's testing puts the failed check. */
export function failureLines(output: string): string {
  const lines = output.split("\n").filter((l) => l.trim() !== "" && !/^=== (RUN|PAUSE|CONT)/.test(l.trim()));
  return lines
    .slice(-12)
    .map((l) => `      ${l.trimEnd()}`)
    .join("\n");
}

/**
 * Judges the suite's outcomes against the list (test/compat/expectations.ts):
 * not ok when a test fails that is not listed, a listed test passes, or, on
 * a full run, a listed test does not exist. `partial` (a `-run` selection)
 * skips the last check. A skipped test counts as not failing. The tests in
 * `either` are run and their outcome said, but not judged: whether they
 * pass here depends on timing chronomad does not decide.
 */
export function suiteReport(
  outcomes: readonly TestOutcome[],
  expected: ExpectedFailures,
  partial: boolean,
  either: ExpectedFailures = {},
): SuiteReport {
  const judged = outcomes.filter((o) => either[o.name] === undefined);
  const results: CaseResult[] = judged.map((o) => ({
    name: o.name,
    ok: o.result !== "fail",
    ...(o.result === "fail" && { error: `\n${failureLines(o.output)}` }),
  }));
  const problems = judgeResults(results, expected);
  const names = outcomes.map((o) => o.name);
  const stale = partial ? [] : [...staleNames(expected, names), ...staleNames(either, names)];
  const skipped = judged.filter((o) => o.result === "skip").length;
  const lines = [
    `${tally("Nomad api suite", results, expected)} (${skipped} of the passing ones skip themselves)`,
  ];
  for (const o of outcomes) {
    const reason = either[o.name];
    if (reason !== undefined) lines.push(`EITHER ${o.name}: ${PAST[o.result]}, not judged (${reason})`);
  }
  lines.push(...problems);
  for (const name of stale) lines.push(`STALE ${name}: listed in expected-failures.ts but no such test ran`);
  return { ok: problems.length === 0 && stale.length === 0, text: lines.join("\n") };
}
