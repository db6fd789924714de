import { execFile, spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CompatCluster, cleanNomadEnv, startCompatCluster } from "../compat-cluster.ts";
import { type CaseResult, judgeResults, listedFailures, staleNames, tally } from "../expectations.ts";
import { EXPECTED_FAILURES } from "./expected-failures.ts";

/**
 * python-nomad 2.1, unmodified, against a real chronomad with two simulated
 * nodes: compat_check.py runs its checks in order (one server for all) and
 * prints one JSON result per check; each area below judges its checks
 * against expected-failures.ts, which only shrinks.
 *
 * The library lives in a virtualenv cached under ~/.cache/chronomad
 * (venv.sh, which .ci/run also runs). Without python3, or without the
 * package, the suite is skipped with a warning.
 */

const here = dirname(fileURLToPath(import.meta.url));
const SCRIPT_TIMEOUT_MS = 6 * 60_000;

/** The check areas of compat_check.py: a check named "jobs.scale" belongs to "jobs". */
const AREAS = [
  "namespaces",
  "nodes",
  "jobs",
  "allocations",
  "deployments",
  "evaluations",
  "search",
  "blocking",
  "events",
  "gc",
  "regions",
  "agent",
] as const;

function findPython(): { python?: string; why?: string } {
  const venv = spawnSync("bash", [join(here, "venv.sh")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 5 * 60_000,
  });
  if (venv.status !== 0) return { why: (venv.stderr || venv.error?.message || "venv.sh failed").trim() };
  return { python: venv.stdout.trim() };
}

const { python, why } = findPython();
if (!python) {
  // The default reporter does not list skipped suites by name; say it anyway.
  console.warn(`python-nomad compatibility suite skipped: ${why}`);
}

interface ScriptRun {
  readonly results: CaseResult[];
  readonly code: number | string | null;
  readonly stderr: string;
}

function runScript(addr: string): Promise<ScriptRun> {
  return new Promise((resolve) => {
    // Asynchronous: the server answering the script runs in this process.
    execFile(
      python!,
      [join(here, "compat_check.py")],
      {
        env: cleanNomadEnv({ NOMAD_ADDR: addr, PYTHONDONTWRITEBYTECODE: "1" }),
        timeout: SCRIPT_TIMEOUT_MS,
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const results: CaseResult[] = [];
        for (const line of String(stdout).split("\n")) {
          if (line.startsWith("{")) results.push(JSON.parse(line) as CaseResult);
        }
        const code = err ? ((err as NodeJS.ErrnoException).code ?? (err.killed ? "killed" : null)) : 0;
        resolve({ results, code, stderr: String(stderr) });
      },
    );
  });
}

describe.skipIf(!python)("python-nomad 2.1 against chronomad with simulated nodes", () => {
  let cluster: CompatCluster;
  let run: ScriptRun;

  beforeAll(async () => {
    cluster = await startCompatCluster({ nodes: 2 });
    run = await runScript(cluster.server.url);
  }, SCRIPT_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    if (run) console.log(tally("python-nomad", run.results, EXPECTED_FAILURES));
    await cluster?.stop();
  });

  it("runs to the end", () => {
    expect(run.code, `compat_check.py did not finish:\n${run.stderr}`).toBe(0);
  });

  for (const area of AREAS) {
    it(area, () => {
      const mine = run.results.filter((r) => r.name.split(".")[0] === area);
      expect(mine.length, `no check of ${area} ran:\n${run.stderr}`).toBeGreaterThan(0);
      for (const line of listedFailures(mine, EXPECTED_FAILURES)) console.log(line);
      const problems = judgeResults(mine, EXPECTED_FAILURES);
      expect(problems, problems.join("\n")).toEqual([]);
    });
  }

  it("has every check in an area, and lists as expected failures only checks that ran", () => {
    const strays = run.results.filter((r) => !(AREAS as readonly string[]).includes(r.name.split(".")[0]!));
    expect(strays.map((r) => r.name)).toEqual([]);
    expect(
      staleNames(
        EXPECTED_FAILURES,
        run.results.map((r) => r.name),
      ),
    ).toEqual([]);
  });
});
