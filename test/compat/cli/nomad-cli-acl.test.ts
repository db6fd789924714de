import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { cleanNomadEnv } from "../compat-cluster.ts";
import { type CaseResult, judgeCase, listedFailures, staleNames, tally } from "../expectations.ts";
import { ACL_EXPECTED_FAILURES } from "./acl-expected-failures.ts";
import { type CliRun, describeRun, expectRun, hasNomad, NOMAD_BIN, runNomad } from "./cli-run.ts";

/**
 * The `nomad acl …` commands of Nomad v1.6.1, the real CLI, against a real
 * chronomad started with ACLs enabled (no client nodes: no command here needs
 * one). Each case runs one command and checks its exit status and the key
 * line of its output, as a user reads it. Cases run in order and share one
 * server: bootstrap gives the management token the later commands use, the
 * policy applied early is the one the role, the token and the binding rule
 * name, and the last cases delete what the first ones made.
 *
 * Known failures are listed in acl-expected-failures.ts; the list only shrinks.
 *
 * NOMAD_BIN names the binary; by default the one that
 * ../shared/scripts/build-nomad.sh caches. Without it the suite is skipped.
 */

if (!hasNomad) {
  // The default reporter does not list skipped suites by name; say it anyway.
  console.warn(`nomad ACL CLI compatibility suite skipped: no nomad binary at ${NOMAD_BIN} (set NOMAD_BIN)`);
}

const COMMAND_TIMEOUT_MS = 20_000;
const CASE_TIMEOUT_MS = COMMAND_TIMEOUT_MS + 10_000;

const POLICY = "readers";
const ROLE = "ops";
const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

let server: TestServer;
let workDir: string;
const results: CaseResult[] = [];
const caseNames: string[] = [];

/** What the cases learn from one another, in order. */
const state = {
  managementSecret: "",
  roleID: "",
  readerAccessor: "",
  readerSecret: "",
  bindingRuleID: "",
};

/** Runs `nomad args…` with stdin closed, as the holder of `token` (none: no NOMAD_TOKEN); never rejects. */
function nomad(args: readonly string[], token = state.managementSecret): Promise<CliRun> {
  const extra: Record<string, string> = { NOMAD_ADDR: server.url, CI: "true" };
  if (token !== "") extra.NOMAD_TOKEN = token;
  return runNomad(args, { cwd: workDir, env: cleanNomadEnv(extra), timeout: COMMAND_TIMEOUT_MS });
}

/** The value of a `Key = value` line of the CLI's key/value output, or an error naming the key. */
function field(run: CliRun, key: string): string {
  const m = run.stdout.match(new RegExp(`^${key}\\s+= (\\S+)$`, "m"));
  if (!m?.[1]) throw new Error(`want a "${key} = …" line; ${describeRun(run)}`);
  return m[1];
}

/** One command case: named by the command, judged against the expected failures. */
function cliCase(name: string, check: () => Promise<void>): void {
  caseNames.push(name);
  it(
    name,
    async () => {
      let error: string | undefined;
      await judgeCase(name, ACL_EXPECTED_FAILURES, async () => {
        try {
          await check();
        } catch (err) {
          error = err instanceof Error ? err.message : String(err);
          throw err;
        }
      }).finally(() => {
        const result = { name, ok: error === undefined, error };
        results.push(result);
        // A listed failure passes the test: show what it fails with now.
        for (const line of listedFailures([result], ACL_EXPECTED_FAILURES)) console.log(line);
      });
    },
    CASE_TIMEOUT_MS,
  );
}

/** A case that needs what an earlier one captured fails saying so, not with a confusing CLI error. */
function need(value: string, what: string): string {
  if (value === "") throw new Error(`no ${what}: an earlier case failed`);
  return value;
}

describe.skipIf(!hasNomad)("nomad v1.6.1 ACL commands against chronomad with ACLs enabled", () => {
  beforeAll(async () => {
    workDir = await mkdtemp(join(tmpdir(), "chronomad-cli-acl-"));
    await writeFile(join(workDir, "readers.hcl"), `namespace "default" {\n  policy = "read"\n}\n`);
    // A key pair made here: the auth method only needs a well-formed PEM public key.
    const { publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const pem = publicKey.export({ type: "spki", format: "pem" }).toString();
    await writeFile(
      join(workDir, "jwt-config.json"),
      JSON.stringify({ JWTValidationPubKeys: [pem], BoundAudiences: ["chronomad"] }),
    );
    server = await startTestServer({ args: ["--acl-enabled"] });
  });
  afterAll(async () => {
    if (results.length > 0) console.log(tally("nomad ACL CLI", results, ACL_EXPECTED_FAILURES));
    await server?.stop();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  // ---- bootstrap, policies ----------------------------------------------

  cliCase("acl bootstrap", async () => {
    const run = await nomad(["acl", "bootstrap"], "");
    expectRun(run, [/^Name\s+= Bootstrap Token$/m, /^Type\s+= management$/m]);
    state.managementSecret = field(run, "Secret ID");
    expect(state.managementSecret).toMatch(new RegExp(`^${UUID}$`));
  });

  cliCase("acl policy apply", async () => {
    need(state.managementSecret, "management token");
    const run = await nomad(["acl", "policy", "apply", "-description", "d", POLICY, "readers.hcl"]);
    expectRun(run, [new RegExp(`^Successfully wrote "${POLICY}" ACL policy!$`, "m")]);
  });

  cliCase("acl policy list", async () => {
    const run = await nomad(["acl", "policy", "list"]);
    expectRun(run, [/^Name\s+Description$/m, new RegExp(`^${POLICY}\\s+d$`, "m")]);
  });

  cliCase("acl policy info", async () => {
    const run = await nomad(["acl", "policy", "info", POLICY]);
    expectRun(run, [
      new RegExp(`^Name\\s+= ${POLICY}$`, "m"),
      /^Description\s+= d$/m,
      /^namespace "default" \{$/m,
      /^\s+policy = "read"$/m,
    ]);
  });

  // ---- roles -------------------------------------------------------------

  cliCase("acl role create", async () => {
    const run = await nomad(["acl", "role", "create", `-name=${ROLE}`, `-policy=${POLICY}`]);
    expectRun(run, [new RegExp(`^Name\\s+= ${ROLE}$`, "m"), new RegExp(`^Policies\\s+= ${POLICY}$`, "m")]);
    state.roleID = field(run, "ID");
    expect(state.roleID).toMatch(new RegExp(`^${UUID}$`));
  });

  cliCase("acl role list", async () => {
    const run = await nomad(["acl", "role", "list"]);
    expectRun(run, [
      /^ID\s+Name\s+Description\s+Policies$/m,
      // No description was given: the CLI's table shows an empty cell as <none>.
      new RegExp(`^${need(state.roleID, "role ID")}\\s+${ROLE}\\s+<none>\\s+${POLICY}$`, "m"),
    ]);
  });

  cliCase("acl role info -by-name", async () => {
    const run = await nomad(["acl", "role", "info", "-by-name", ROLE]);
    expectRun(run, [
      new RegExp(`^ID\\s+= ${need(state.roleID, "role ID")}$`, "m"),
      new RegExp(`^Name\\s+= ${ROLE}$`, "m"),
      new RegExp(`^Policies\\s+= ${POLICY}$`, "m"),
    ]);
  });

  // ---- tokens --------------------------------------------------------------

  cliCase("acl token create", async () => {
    const run = await nomad(["acl", "token", "create", "-name=reader", `-policy=${POLICY}`, "-type=client"]);
    expectRun(run, [
      /^Name\s+= reader$/m,
      /^Type\s+= client$/m,
      new RegExp(`^Policies\\s+= \\[${POLICY}\\]$`, "m"),
    ]);
    state.readerAccessor = field(run, "Accessor ID");
    state.readerSecret = field(run, "Secret ID");
    expect(state.readerAccessor).toMatch(new RegExp(`^${UUID}$`));
    expect(state.readerSecret).toMatch(new RegExp(`^${UUID}$`));
  });

  cliCase("acl token list", async () => {
    const run = await nomad(["acl", "token", "list"]);
    expectRun(run, [
      /^Name\s+Type\s+Global\s+Accessor ID\s+Expired$/m,
      /^Bootstrap Token\s+management\s+true\s+\S+\s+false$/m,
      new RegExp(
        `^reader\\s+client\\s+false\\s+${need(state.readerAccessor, "reader accessor")}\\s+false$`,
        "m",
      ),
    ]);
  });

  cliCase("acl token info", async () => {
    const run = await nomad(["acl", "token", "info", need(state.readerAccessor, "reader accessor")]);
    expectRun(run, [
      new RegExp(`^Accessor ID\\s+= ${state.readerAccessor}$`, "m"),
      /^Name\s+= reader$/m,
      new RegExp(`^Policies\\s+= \\[${POLICY}\\]$`, "m"),
    ]);
  });

  cliCase("acl token self (as the reader)", async () => {
    const run = await nomad(["acl", "token", "self"], need(state.readerSecret, "reader secret"));
    expectRun(run, [new RegExp(`^Accessor ID\\s+= ${state.readerAccessor}$`, "m"), /^Name\s+= reader$/m]);
  });

  cliCase("job status (as the reader)", async () => {
    // namespace "default" read covers listing jobs; there are none.
    const run = await nomad(["job", "status"], need(state.readerSecret, "reader secret"));
    expectRun(run, [/^No running jobs$/m]);
  });

  cliCase("node status (as the reader: refused)", async () => {
    // The policy grants nothing on nodes: node:read is missing.
    const run = await nomad(["node", "status"], need(state.readerSecret, "reader secret"));
    expectRun(run, [/^Error querying node status: Unexpected response code: 403 \(Permission denied\)$/m], 1);
  });

  cliCase("acl token update", async () => {
    const run = await nomad([
      "acl",
      "token",
      "update",
      "-name=renamed",
      need(state.readerAccessor, "reader accessor"),
    ]);
    expectRun(run, [
      new RegExp(`^Accessor ID\\s+= ${state.readerAccessor}$`, "m"),
      /^Name\s+= renamed$/m,
      new RegExp(`^Policies\\s+= \\[${POLICY}\\]$`, "m"),
    ]);
  });

  // ---- auth methods, binding rules -------------------------------------------

  cliCase("acl auth-method create", async () => {
    const run = await nomad([
      "acl",
      "auth-method",
      "create",
      "-name=jwt",
      "-type=JWT",
      "-max-token-ttl=1h",
      "-token-locality=local",
      "-config=@jwt-config.json",
    ]);
    expectRun(run, [
      /^Name\s+= jwt$/m,
      /^Type\s+= JWT$/m,
      /^Locality\s+= local$/m,
      /^MaxTokenTTL\s+= 1h0m0s$/m,
    ]);
  });

  cliCase("acl auth-method list", async () => {
    const run = await nomad(["acl", "auth-method", "list"]);
    expectRun(run, [/^Name\s+Type\s+Default$/m, /^jwt\s+JWT\s+false$/m]);
  });

  cliCase("acl binding-rule create", async () => {
    const run = await nomad([
      "acl",
      "binding-rule",
      "create",
      "-auth-method=jwt",
      "-bind-type=policy",
      `-bind-name=${POLICY}`,
    ]);
    expectRun(run, [
      /^Auth Method\s+= jwt$/m,
      /^Bind Type\s+= policy$/m,
      new RegExp(`^Bind Name\\s+= ${POLICY}$`, "m"),
    ]);
    state.bindingRuleID = field(run, "ID");
    expect(state.bindingRuleID).toMatch(new RegExp(`^${UUID}$`));
  });

  cliCase("acl binding-rule list", async () => {
    const run = await nomad(["acl", "binding-rule", "list"]);
    // No description was given: the CLI's table shows an empty cell as <none>.
    expectRun(run, [
      /^ID\s+Description\s+Auth Method$/m,
      new RegExp(`^${need(state.bindingRuleID, "binding rule ID")}\\s+<none>\\s+jwt$`, "m"),
    ]);
  });

  // ---- deleting ----------------------------------------------------------------

  cliCase("acl token delete", async () => {
    const accessor = need(state.readerAccessor, "reader accessor");
    const run = await nomad(["acl", "token", "delete", accessor]);
    expectRun(run, [new RegExp(`^Token ${accessor} successfully deleted$`, "m")]);
    // The deleted token no longer authenticates anyone. 404, not 403: in 1.6.1
    // /v1/acl/token/self looks the secret up (ACL.ResolveToken) without
    // authenticating it first, and answers 404 when nothing matches.
    const self = await nomad(["acl", "token", "self"], state.readerSecret);
    expectRun(
      self,
      [/^Error fetching self token: Unexpected response code: 404 \(ACL token not found\)$/m],
      1,
    );
  });

  cliCase("acl role delete", async () => {
    const roleID = need(state.roleID, "role ID");
    const run = await nomad(["acl", "role", "delete", roleID]);
    expectRun(run, [new RegExp(`^ACL role ${roleID} successfully deleted$`, "m")]);
  });

  cliCase("acl policy delete", async () => {
    const run = await nomad(["acl", "policy", "delete", POLICY]);
    expectRun(run, [new RegExp(`^Successfully deleted ${POLICY} policy!$`, "m")]);
    const list = await nomad(["acl", "policy", "list"]);
    expectRun(list, [/^No policies found$/m]);
  });

  it("lists as expected failures only commands of this suite", () => {
    expect(staleNames(ACL_EXPECTED_FAILURES, caseNames), "names on the list that are no case here").toEqual(
      [],
    );
  });
});
