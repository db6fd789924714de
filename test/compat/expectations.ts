/**
 * Known failures of a client compatibility suite: case name → one-line
 * reason naming the missing feature (and its issue). The list can only
 * shrink: a listed case must fail, and one that passes fails the suite with
 * "remove it from the list"; an unlisted case that fails fails the suite.
 */
export type ExpectedFailures = Readonly<Record<string, string>>;

/** The outcome of one case run outside vitest (a Python check, a Go subtest). */
export interface CaseResult {
  readonly name: string;
  readonly ok: boolean;
  /** Why it failed, as the client reported it. */
  readonly error?: string;
}

/** What went against the list, one line (or paragraph) per case; empty when all is as expected. */
export function judgeResults(results: readonly CaseResult[], expected: ExpectedFailures): string[] {
  const problems: string[] = [];
  for (const r of results) {
    const reason = expected[r.name];
    if (reason === undefined && !r.ok) problems.push(`FAIL ${r.name}: ${r.error ?? "failed"}`);
    if (reason !== undefined && r.ok) {
      problems.push(
        `PASS ${r.name}: listed as an expected failure ("${reason}") but passes: remove it from the list`,
      );
    }
  }
  return problems;
}

/** The listed cases that fail, each with what it fails with now (for whoever removes it from the list). */
export function listedFailures(results: readonly CaseResult[], expected: ExpectedFailures): string[] {
  return results
    .filter((r) => !r.ok && expected[r.name] !== undefined)
    .map((r) => `expected failure "${r.name}": ${(r.error ?? "failed").slice(0, 1500)}`);
}

/**
 * Runs one case in a vitest test: a listed case must fail (its failure is
 * only noted), an unlisted one must pass.
 */
export async function judgeCase(
  name: string,
  expected: ExpectedFailures,
  check: () => Promise<void> | void,
): Promise<void> {
  let failure: unknown;
  try {
    await check();
  } catch (err) {
    failure = err;
  }
  const reason = expected[name];
  if (reason === undefined) {
    if (failure !== undefined) throw failure;
    return;
  }
  if (failure === undefined) {
    throw new Error(
      `"${name}" passes but is listed as an expected failure ("${reason}"): remove it from the list`,
    );
  }
}

/** Listed names that are no case of the suite (a typo, or a case renamed or removed). */
export function staleNames(expected: ExpectedFailures, caseNames: Iterable<string>): string[] {
  const known = new Set(caseNames);
  return Object.keys(expected).filter((name) => !known.has(name));
}

/**
 * The tally printed at the end of a suite. Worded so that it is not taken
 * for a test runner's closing "N passed, N failed" line.
 */
export function tally(suite: string, results: readonly CaseResult[], expected: ExpectedFailures): string {
  const passed = results.filter((r) => r.ok).length;
  const listed = results.filter((r) => !r.ok && expected[r.name] !== undefined).length;
  return `${suite}: ${passed} of ${results.length} cases pass; ${listed} fail as listed in the expected failures`;
}
