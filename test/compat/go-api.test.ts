import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CompatCluster, cleanNomadEnv, startCompatCluster } from "./compat-cluster.ts";
import { judgeResults, listedFailures, staleNames, tally } from "./expectations.ts";
import { EXPECTED_FAILURES } from "./go-api/expected-failures.ts";
import { type GoRun, goTestJson, leaves } from "./go-test-json.ts";

/**
 * The Go API client of the newest Nomad release against a real server with
 * two simulated nodes: `go test -json` in test/compat/go-api runs every test
 * once (one server for all), and each top-level test below judges its
 * subtests (or itself, without subtests) against
 * go-api/expected-failures.ts, which only shrinks.
 *
 * jobs_test.go checks that a job carrying fields Nomad 1.5 does not know is
 * read back as Nomad 1.5 would; the area tests (namespaces_test.go,
 * nodes_test.go, jobs_lifecycle_test.go, ...) cover what
 * test/compat/python-nomad covers. The module's go.sum is committed;
 * `.ci/run` downloads the modules beforehand, so here they are only compiled.
 */

const moduleDir = join(dirname(fileURLToPath(import.meta.url)), "go-api");
const GO_TEST_TIMEOUT_MS = 10 * 60_000;

/** Every top-level test of the module, in the order go test runs them. */
const TOP_LEVEL_TESTS = [
  "TestAllocations",
  "TestBlocking",
  "TestDeployments",
  "TestEvaluations",
  "TestEvents",
  "TestJobs",
  "TestJobFromNewerClient",
  "TestWrongTypeIsBadRequest",
  "TestJobCanonicalizedByNewerClient",
  "TestNamespaces",
  "TestNodes",
  "TestSearch",
  "TestGC",
  "TestRegions",
  "TestAgent",
] as const;

const goVersion = spawnSync("go", ["version"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const hasGo = goVersion.error === undefined && goVersion.status === 0;
if (!hasGo) {
  // The default reporter does not list skipped suites by name; say it anyway.
  console.warn("Go API client compatibility test skipped: `go` is not on PATH");
}

/** Runs every test of the module but the ACL ones against the server at `addr`. */
function goTest(addr: string): Promise<GoRun> {
  return goTestJson(
    moduleDir,
    // -mod=readonly: the committed go.mod and go.sum, never updated.
    // -skip: the TestACL* tests need a server with ACLs (go-api-acl.test.ts).
    ["-mod=readonly", "-count=1", "-timeout", "9m", "-skip", "^TestACL", "./..."],
    cleanNomadEnv({ NOMAD_ADDR: addr }),
    GO_TEST_TIMEOUT_MS,
  );
}

describe.skipIf(!hasGo)("Go API client of the newest Nomad release (go test in test/compat/go-api)", () => {
  let cluster: CompatCluster;
  let run: GoRun;

  beforeAll(async () => {
    cluster = await startCompatCluster({ nodes: 2 });
    run = await goTest(cluster.server.url);
  }, GO_TEST_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    if (run) {
      const judged = TOP_LEVEL_TESTS.flatMap((top) => leaves(run.tests, top));
      console.log(tally("Go api client", judged, EXPECTED_FAILURES));
    }
    await cluster?.stop();
  });

  it("builds and runs every test", () => {
    expect(run.tests.size, `go test ran no test (exit ${run.code}):\n${run.output}`).toBeGreaterThan(0);
    const ran = [...run.tests.keys()].filter((name) => !name.includes("/"));
    expect(
      ran.filter((name) => !(TOP_LEVEL_TESTS as readonly string[]).includes(name)),
      "tests not judged here",
    ).toEqual([]);
  });

  for (const top of TOP_LEVEL_TESTS) {
    it(top, () => {
      const results = leaves(run.tests, top);
      expect(results.length, `${top} did not run:\n${run.output}`).toBeGreaterThan(0);
      for (const line of listedFailures(results, EXPECTED_FAILURES)) console.log(line);
      const problems = judgeResults(results, EXPECTED_FAILURES);
      expect(problems, problems.join("\n\n")).toEqual([]);
    });
  }

  it("lists as expected failures only tests that ran", () => {
    expect(staleNames(EXPECTED_FAILURES, run.tests.keys())).toEqual([]);
  });
});
