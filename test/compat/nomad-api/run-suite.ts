/**
 * Nomad's own api test suite (the `_test.go` files of the Go module
 * github.com/hashicorp/nomad/api, unmodified) against chronomad.
 *
 * The suite's harness starts a server per test by running `nomad agent` from
 * PATH; prepare-nomad-shim.ts writes a `nomad` that starts chronomad instead.
 * The module is downloaded from the Go module proxy at the pinned version,
 * copied out of the read-only module cache, and tested with `go test -json`.
 *
 * Every test that fails must be listed in expected-failures.ts with the
 * missing feature it waits for; a listed test that passes fails the run too,
 * so the list only shrinks. Prints the pass count.
 *
 *   node --import tsx test/compat/nomad-api/run-suite.ts [-run REGEXP]
 *
 * Exit status: 0 when the results match the list (or Go is missing: skipped,
 * saying so), 1 otherwise.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { hasNomad, NOMAD_BIN } from "../cli/cli-run.ts";
import { parseGoTestEvent } from "../go-test-json.ts";
import { prepareNomadShim } from "../nomad-shim/prepare-nomad-shim.ts";
import { REAL_CLIENT_ENV } from "../nomad-shim/real-client-agent.ts";
import { EITHER_OUTCOME, expectedFailures } from "./expected-failures.ts";
import { CRASH, type GoTestRun, resumeSuite } from "./resume-suite.ts";
import { failureLines, suiteReport, type TestOutcome } from "./suite-report.ts";

/** The newest api module the registry served when this suite was set up. */
export const API_MODULE = "github.com/hashicorp/nomad/api@v0.0.0-20261016150620-df630b26e78a";

/** Servers started at once: each takes most of a core while it starts. */
const PARALLEL = process.env.NOMAD_API_SUITE_PARALLEL ?? "3";

/**
 * Unlisted failures run again, alone, when there are at most this many:
 * some of the suite's tests are timed to the millisecond against mocks (the
 * lock leaser's) and can miss under the parallel run's load on two cores, as
 * Nomad's own CI reruns failures (gotestsum --rerun-fails). More failures
 * than this are no flake, and are judged as they are.
 */
const MAX_RERUNS = 5;

/** What may fail: more without a real client agent for the dev agents. */
const EXPECTED = expectedFailures(hasNomad);

function say(line: string): void {
  process.stderr.write(`nomad-api suite: ${line}\n`);
}

function downloadModule(): string {
  const out = execFileSync("go", ["mod", "download", "-json", API_MODULE], {
    encoding: "utf8",
    env: { ...process.env, GOFLAGS: "-mod=mod" },
  });
  const info = JSON.parse(out) as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`go mod download ${API_MODULE}: ${info.Error ?? "no directory"}`);
  return info.Dir;
}

async function runGoTest(
  dir: string,
  shimDir: string,
  extraArgs: readonly string[],
  parallel = PARALLEL,
): Promise<GoTestRun> {
  const args = [
    "test",
    "-json",
    "-count=1",
    "-vet=off",
    "-timeout",
    "60m",
    "-parallel",
    parallel,
    ...extraArgs,
    ".",
  ];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${shimDir}:${process.env.PATH ?? ""}`,
    GOFLAGS: "-mod=mod",
  };
  // Nothing from the caller's Nomad settings may reach the suite's clients.
  for (const name of Object.keys(env))
    if (name.startsWith("NOMAD_") && name !== "NOMAD_TEST_LOG_LEVEL") delete env[name];
  // Dev agents get a real Nomad client agent when the binary is here (issue: real clients).
  if (hasNomad) env[REAL_CLIENT_ENV] = NOMAD_BIN;
  const child = spawn("go", args, { cwd: dir, env, stdio: ["ignore", "pipe", "inherit"] });
  const tests: GoTestRun["tests"] = new Map();
  let finished = 0;
  for await (const line of createInterface({ input: child.stdout })) {
    const event = parseGoTestEvent(line);
    if (!event?.Test) continue;
    // Subtests are judged with their top-level test.
    const top = event.Test.split("/")[0] ?? event.Test;
    let entry = tests.get(top);
    if (!entry) {
      entry = { output: [] };
      tests.set(top, entry);
    }
    if (event.Action === "output" && event.Output) {
      if (entry.output.length < 200) entry.output.push(event.Output);
      if (CRASH.test(event.Output)) entry.crash = [];
      if (entry.crash && entry.crash.length < 8) entry.crash.push(event.Output);
    }
    if (
      event.Test === top &&
      (event.Action === "pass" || event.Action === "fail" || event.Action === "skip")
    ) {
      entry.result = event.Action;
      finished += 1;
      if (finished % 25 === 0) say(`${finished} tests finished`);
    }
  }
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { tests, code };
}

/** The suite, resumed when its test binary dies partway (resume-suite.ts). */
function runSuite(dir: string, shimDir: string, argv: readonly string[]): Promise<TestOutcome[]> {
  return resumeSuite(
    (skip) => runGoTest(dir, shimDir, skip.length > 0 ? [...argv, "-skip", `^(${skip.join("|")})$`] : argv),
    say,
  );
}

/**
 * Runs the few unlisted failures again, alone, up to twice (gotestsum's
 * --rerun-fails default), and takes a pass as the result, saying so.
 */
async function rerunFlakes(dir: string, shimDir: string, outcomes: TestOutcome[]): Promise<void> {
  for (let round = 0; round < 2; round += 1) {
    const failed = outcomes.filter(
      (o) => o.result === "fail" && EXPECTED[o.name] === undefined && EITHER_OUTCOME[o.name] === undefined,
    );
    if (failed.length === 0 || failed.length > MAX_RERUNS) return;
    const names = failed.map((o) => o.name);
    say(`running again, alone: ${names.join(", ")}`);
    const again = await runGoTest(dir, shimDir, ["-run", `^(${names.join("|")})$`], "1");
    for (const [name, t] of again.tests) {
      const at = outcomes.findIndex((o) => o.name === name);
      if (at < 0 || t.result !== "pass") continue;
      // Why it failed, so that a flaky test can be looked into from CI's log alone.
      say(
        `FLAKY ${name}: failed in the parallel run, passed alone; it said:\n${failureLines(outcomes[at]!.output)}`,
      );
      outcomes[at] = { name, result: t.result, output: t.output.join("") };
    }
  }
}

async function main(argv: readonly string[]): Promise<number> {
  const go = spawnSync("go", ["version"], { encoding: "utf8" });
  if (go.error || go.status !== 0) {
    say("skipped: `go` is not on PATH");
    return 0;
  }
  const shimDir = await prepareNomadShim();
  const dir = mkdtempSync(join(tmpdir(), "nomad-api-suite-"));
  try {
    say(`testing ${API_MODULE} with ${join(shimDir, "nomad")} first on PATH`);
    say(
      hasNomad
        ? `dev agents' clients: real Nomad client agents (${NOMAD_BIN}) joined over chronomad's RPC port`
        : `dev agents' clients: simulated nodes (no nomad binary at ${NOMAD_BIN}; set NOMAD_BIN)`,
    );
    cpSync(downloadModule(), dir, { recursive: true });
    // The module cache is read-only; go test writes nothing, but the copy's own removal needs write bits.
    execFileSync("chmod", ["-R", "u+w", dir]);
    const outcomes = await runSuite(dir, shimDir, argv);
    await rerunFlakes(dir, shimDir, outcomes);
    const report = suiteReport(outcomes, EXPECTED, argv.length > 0, EITHER_OUTCOME);
    process.stdout.write(`${report.text}\n`);
    return report.ok ? 0 : 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main(process.argv.slice(2));
