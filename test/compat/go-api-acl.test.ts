import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { cleanNomadEnv } from "./compat-cluster.ts";
import { judgeResults, listedFailures, staleNames, tally } from "./expectations.ts";
import { ACL_EXPECTED_FAILURES } from "./go-api/acl-expected-failures.ts";
import { type GoRun, goTestJson, leaves } from "./go-test-json.ts";

/**
 * Nomad's ACL system driven by the Go API client of the newest Nomad
 * release: the TestACL* tests of test/compat/go-api (acl_test.go,
 * acl_login_test.go) against a server of their own started with
 * `--acl-enabled`, which they bootstrap. The area tests' server
 * (go-api.test.ts) has no ACLs, and there these tests are left out. Each
 * top-level test below judges its subtests against
 * go-api/acl-expected-failures.ts, which only shrinks.
 */

const moduleDir = join(dirname(fileURLToPath(import.meta.url)), "go-api");
const GO_TEST_TIMEOUT_MS = 5 * 60_000;

/** Every top-level ACL test of the module. */
const ACL_TESTS = [
  "TestACLBootstrap",
  "TestACLPolicies",
  "TestACLTokens",
  "TestACLRoles",
  "TestACLEnforcement",
  "TestACLAuthMethods",
  "TestACLBindingRules",
  "TestACLLogin",
] as const;

const goVersion = spawnSync("go", ["version"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const hasGo = goVersion.error === undefined && goVersion.status === 0;
if (!hasGo) {
  // The default reporter does not list skipped suites by name; say it anyway.
  console.warn("Go API client ACL compatibility test skipped: `go` is not on PATH");
}

describe.skipIf(!hasGo)("Go API client against a server with ACLs (go test -run TestACL)", () => {
  let server: TestServer;
  let run: GoRun;

  beforeAll(async () => {
    server = await startTestServer({ args: ["--acl-enabled"] });
    // No NOMAD_* setting of the caller's (a token, a namespace) reaches the
    // client, and the tests bootstrap this server rather than take a token.
    const env = cleanNomadEnv({ CHRONOMAD_ACL_ADDR: server.url, CHRONOMAD_ACL_TOKEN: "" });
    run = await goTestJson(
      moduleDir,
      // -mod=readonly: the committed go.mod and go.sum, never updated.
      ["-mod=readonly", "-count=1", "-timeout", "4m", "-run", "^TestACL", "./..."],
      env,
      GO_TEST_TIMEOUT_MS,
    );
  }, GO_TEST_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    if (run) {
      const judged = ACL_TESTS.flatMap((top) => leaves(run.tests, top));
      console.log(tally("Go api client (ACL)", judged, ACL_EXPECTED_FAILURES));
    }
    await server?.stop();
  });

  it("builds and runs every ACL test", () => {
    expect(run.tests.size, `go test ran no test (exit ${run.code}):\n${run.output}`).toBeGreaterThan(0);
    const ran = [...run.tests.keys()].filter((name) => !name.includes("/"));
    expect(
      ran.filter((name) => !(ACL_TESTS as readonly string[]).includes(name)),
      "tests not judged here",
    ).toEqual([]);
  });

  for (const top of ACL_TESTS) {
    it(top, () => {
      const results = leaves(run.tests, top);
      expect(results.length, `${top} did not run:\n${run.output}`).toBeGreaterThan(0);
      for (const line of listedFailures(results, ACL_EXPECTED_FAILURES)) console.log(line);
      const problems = judgeResults(results, ACL_EXPECTED_FAILURES);
      expect(problems, problems.join("\n\n")).toEqual([]);
    });
  }

  it("lists as expected failures only tests that ran", () => {
    expect(staleNames(ACL_EXPECTED_FAILURES, run.tests.keys())).toEqual([]);
  });
});
