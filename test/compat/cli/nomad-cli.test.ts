import { type ChildProcess, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CompatCluster, cleanNomadEnv, startCompatCluster, waitFor } from "../compat-cluster.ts";
import { type CaseResult, judgeCase, listedFailures, staleNames, tally } from "../expectations.ts";
import { type CliRun, describeRun, expectRun, hasNomad, NOMAD_BIN, runNomad } from "./cli-run.ts";
import { EXPECTED_FAILURES } from "./expected-failures.ts";

/**
 * The everyday `nomad` commands of Nomad v1.6.1, the real CLI, against a real
 * chronomad with two simulated client nodes. Each case runs one command (a
 * few run two) and checks its exit status and the key line of its output, as
 * a user would read it. Cases run in order and share one server: the job
 * that `job run` starts is the one later commands look at.
 *
 * Known failures are listed in expected-failures.ts; the list only shrinks.
 *
 * NOMAD_BIN names the binary; by default the one that
 * ../shared/scripts/build-nomad.sh caches. Without it the suite is skipped.
 */

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = join(here, "fixtures");
if (!hasNomad) {
  // The default reporter does not list skipped suites by name; say it anyway.
  console.warn(`nomad CLI compatibility suite skipped: no nomad binary at ${NOMAD_BIN} (set NOMAD_BIN)`);
}

/** A command that monitors an evaluation or a deployment gets longer. */
const COMMAND_TIMEOUT_MS = 20_000;
const MONITOR_TIMEOUT_MS = 30_000;
const CASE_TIMEOUT_MS = 2 * MONITOR_TIMEOUT_MS + 10_000;

const JOB = "compat-web";
const BATCH = "compat-batch";
const NAMESPACE = "compat-ns";
/** Version 1 of the job: one more allocation, and a changed task (every allocation replaced). */
const SECOND_VERSION = ["-var", "count=3", "-var", "tag=v1"];

let cluster: CompatCluster;
const results: CaseResult[] = [];
const caseNames: string[] = [];

function env(): NodeJS.ProcessEnv {
  return cleanNomadEnv({ NOMAD_ADDR: cluster.server.url, CI: "true" });
}

/** Runs `nomad args…` with stdin closed; never rejects (a timeout is a SIGTERM). */
function nomad(args: readonly string[], timeout = COMMAND_TIMEOUT_MS): Promise<CliRun> {
  return runNomad(args, { cwd: fixtures, env: env(), timeout });
}

/** One command case: named by the command, judged against the expected failures. */
function cliCase(name: string, check: () => Promise<void>): void {
  caseNames.push(name);
  it(
    name,
    async () => {
      let error: string | undefined;
      await judgeCase(name, EXPECTED_FAILURES, async () => {
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
        for (const line of listedFailures([result], EXPECTED_FAILURES)) console.log(line);
      });
    },
    CASE_TIMEOUT_MS,
  );
}

async function getJson<T>(path: string): Promise<T> {
  const res = await cluster.server.call(path);
  if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

interface Alloc {
  ID: string;
  NodeID: string;
  JobID: string;
  ClientStatus: string;
  DesiredStatus: string;
}
interface Deployment {
  ID: string;
  JobVersion: number;
  Status: string;
}
interface Evaluation {
  ID: string;
  JobID: string;
  TriggeredBy: string;
  Status: string;
}

const runningAllocs = async (job: string) =>
  (await getJson<Alloc[]>(`/v1/job/${job}/allocations`)).filter(
    (a) => a.ClientStatus === "running" && a.DesiredStatus === "run",
  );

const SERVICE = "compat-svc";

/**
 * Registers SERVICE for a running allocation of JOB as the node running it
 * would (ServiceRegistration.Upsert with its SecretID); again is a no-op.
 */
async function registerService(): Promise<{ ID: string; AllocID: string }> {
  const [alloc] = await runningAllocs(JOB);
  if (!alloc) throw new Error(`no running allocation of ${JOB} to register a service for`);
  const node = cluster.sim.nodes.find((n) => n.id === alloc.NodeID);
  if (!node) throw new Error(`allocation ${alloc.ID} is on no simulated node`);
  const { Datacenter } = await getJson<{ Datacenter: string }>(`/v1/node/${alloc.NodeID}`);
  const service = {
    ID: `_nomad-task-${alloc.ID}-web-${SERVICE}-http`,
    ServiceName: SERVICE,
    Namespace: "default",
    NodeID: alloc.NodeID,
    Datacenter,
    JobID: JOB,
    AllocID: alloc.ID,
    Tags: ["v0", "cli"],
    Address: "10.0.0.9",
    Port: 8080,
  };
  const res = await cluster.server.call("/v1/rpc/ServiceRegistration.Upsert", {
    method: "PUT",
    headers: { "X-Nomad-Token": node.secret },
    body: JSON.stringify({ Services: [service] }),
  });
  if (!res.ok) throw new Error(`ServiceRegistration.Upsert: ${res.status} ${await res.text()}`);
  return { ID: service.ID, AllocID: alloc.ID };
}

/** The monitor's closing line for an evaluation (job run, scale, revert, stop; alloc stop). */
const EVAL_COMPLETE = /Evaluation "[0-9a-f]{8}" finished with status "complete"/;

describe.skipIf(!hasNomad)("nomad v1.6.1 CLI against chronomad with simulated nodes", () => {
  beforeAll(async () => {
    cluster = await startCompatCluster({ nodes: 2 });
  });
  afterAll(async () => {
    if (results.length > 0) console.log(tally("nomad CLI", results, EXPECTED_FAILURES));
    await cluster?.stop();
  });

  // ---- jobs -------------------------------------------------------------

  cliCase("job run", async () => {
    const run = await nomad(["job", "run", "web.nomad.hcl"], MONITOR_TIMEOUT_MS);
    expectRun(run, [EVAL_COMPLETE, /Deployment completed successfully/]);
  });

  cliCase("job run (batch)", async () => {
    const run = await nomad(["job", "run", "batch.nomad.hcl"], MONITOR_TIMEOUT_MS);
    expectRun(run, [EVAL_COMPLETE, /Allocation "[0-9a-f]{8}" created/]);
  });

  cliCase("job status", async () => {
    // The list, then the job: running, its two allocations running.
    expectRun(await nomad(["job", "status"]), [new RegExp(`^${JOB}\\s+service\\s+50\\s+running`, "m")]);
    const run = await nomad(["job", "status", JOB]);
    expectRun(run, [/^Status\s+= running$/m, /^web\s+0\s+0\s+2\s+0\s+0\s+0/m]);
  });

  cliCase("job inspect", async () => {
    const run = await nomad(["job", "inspect", JOB]);
    expectRun(run);
    const { Job } = JSON.parse(run.stdout) as { Job: { ID: string; TaskGroups: { Count: number }[] } };
    expect(Job.ID).toBe(JOB);
    expect(Job.TaskGroups[0]?.Count).toBe(2);
  });

  cliCase("job plan", async () => {
    // Exit 1: the plan would create allocations. The diff is Nomad's, field by field.
    const run = await nomad(["job", "plan", ...SECOND_VERSION, "web.nomad.hcl"]);
    expectRun(
      run,
      [/^\+\/- Task Group: "web" \(1 create/m, /\+\/- Count: "2" => "3"/, /\+\/- Env\[TAG\]: "v0" => "v1"/],
      1,
    );
  });

  cliCase("job run (a second version)", async () => {
    const run = await nomad(["job", "run", ...SECOND_VERSION, "web.nomad.hcl"], MONITOR_TIMEOUT_MS);
    expectRun(run, [EVAL_COMPLETE, /Deployment completed successfully/]);
  });

  cliCase("job history", async () => {
    const run = await nomad(["job", "history", JOB]);
    expectRun(run, [/^Version\s+= 1$/m, /^Version\s+= 0$/m]);
    // Both versions were deployed successfully: Nomad marks them stable.
    const stable = run.stdout.match(/^Stable\s+= true$/gm) ?? [];
    if (stable.length !== 2) throw new Error(`want both versions Stable = true; ${describeRun(run)}`);
  });

  cliCase("job history -p", async () => {
    const run = await nomad(["job", "history", "-p", JOB]);
    expectRun(run, [/^Diff\s+=/m, /\+\/- Count: "2" => "3"/]);
  });

  cliCase("job scale", async () => {
    // -detach: scaling updates the running allocations in place, and the
    // simulated nodes report deployment health only for new allocations, so
    // the deployment a monitor would follow never completes here.
    const run = await nomad(["job", "scale", "-detach", JOB, "web", "4"]);
    expectRun(run, [/^Evaluation ID: [0-9a-f-]{36}$/m]);
    const evalID = run.stdout.match(/^Evaluation ID: ([0-9a-f-]{36})$/m)![1];
    await waitFor(
      "the scaling evaluation complete",
      20_000,
      async () => (await getJson<Evaluation>(`/v1/evaluation/${evalID}`)).Status === "complete",
    );
    const job = await getJson<{ TaskGroups: { Count: number }[] }>(`/v1/job/${JOB}`);
    expect(job.TaskGroups[0]?.Count, "count after job scale").toBe(4);
  });

  cliCase("job revert", async () => {
    const run = await nomad(["job", "revert", JOB, "0"], MONITOR_TIMEOUT_MS);
    expectRun(run, [EVAL_COMPLETE]);
    const job = await getJson<{ TaskGroups: { Count: number }[] }>(`/v1/job/${JOB}`);
    expect(job.TaskGroups[0]?.Count, "count after reverting to version 0").toBe(2);
  });

  // ---- deployments, allocations -----------------------------------------

  cliCase("deployment list", async () => {
    const run = await nomad(["deployment", "list"]);
    expectRun(run, [new RegExp(`^[0-9a-f]{8}\\s+${JOB}\\s+0\\s+successful`, "m")]);
  });

  cliCase("deployment status", async () => {
    const first = (await getJson<Deployment[]>(`/v1/job/${JOB}/deployments`)).find((d) => d.JobVersion === 0);
    if (!first) throw new Error("no deployment of version 0 to look at");
    const run = await nomad(["deployment", "status", first.ID.slice(0, 8)]);
    expectRun(run, [/^Status\s+= successful$/m, /^web\s+2\s+2\s+2\s+0/m]);
  });

  cliCase("alloc status", async () => {
    const [alloc] = await runningAllocs(JOB);
    if (!alloc) throw new Error(`no running allocation of ${JOB}`);
    const run = await nomad(["alloc", "status", alloc.ID.slice(0, 8)]);
    expectRun(run, [/^Client Status\s+= running$/m, /^Task "server" is "running"$/m]);
  });

  cliCase("alloc stop", async () => {
    const [alloc] = await runningAllocs(JOB);
    if (!alloc) throw new Error(`no running allocation of ${JOB}`);
    const run = await nomad(["alloc", "stop", alloc.ID], MONITOR_TIMEOUT_MS);
    expectRun(run, [EVAL_COMPLETE]);
  });

  // ---- evaluations, scheduler configuration ------------------------------

  cliCase("eval list", async () => {
    const run = await nomad(["eval", "list"]);
    expectRun(run, [
      new RegExp(`^[0-9a-f]{8}\\s+50\\s+job-register\\s+${JOB}\\s+default\\s+<none>\\s+complete`, "m"),
    ]);
  });

  cliCase("eval status", async () => {
    const evals = await getJson<Evaluation[]>(`/v1/job/${JOB}/evaluations`);
    const reg = evals.find((e) => e.TriggeredBy === "job-register");
    if (!reg) throw new Error(`no job-register evaluation of ${JOB}`);
    const run = await nomad(["eval", "status", reg.ID.slice(0, 8)]);
    expectRun(run, [
      /^Status\s+= complete$/m,
      /^TriggeredBy\s+= job-register$/m,
      new RegExp(`^Job ID\\s+= ${JOB}$`, "m"),
    ]);
  });

  cliCase("operator scheduler get-config", async () => {
    const run = await nomad(["operator", "scheduler", "get-config"]);
    expectRun(run, [/^Scheduler Algorithm\s+= binpack$/m, /^Pause Eval Broker\s+= false$/m]);
  });

  cliCase("operator scheduler set-config", async () => {
    const run = await nomad(["operator", "scheduler", "set-config", "-pause-eval-broker=true"]);
    expectRun(run, [/Scheduler configuration updated!/]);
    const after = await nomad(["operator", "scheduler", "get-config"]);
    expectRun(after, [/^Pause Eval Broker\s+= true$/m]);
  });

  cliCase("eval delete -filter", async () => {
    // The batch job has finished: its evaluations are safe to delete (the broker is paused).
    await waitFor(
      `${BATCH} dead`,
      20_000,
      async () => (await getJson<{ Status: string }>(`/v1/job/${BATCH}`)).Status === "dead",
    );
    const run = await nomad(["eval", "delete", "-yes", "-filter", `JobID == "${BATCH}"`]);
    expectRun(run, [/^Successfully deleted [1-9]\d* evaluations?$/m]);
    const left = await getJson<Evaluation[]>(`/v1/job/${BATCH}/evaluations`);
    expect(left, "evaluations left after eval delete").toEqual([]);
  });

  cliCase("operator scheduler set-config (unpause)", async () => {
    const run = await nomad(["operator", "scheduler", "set-config", "-pause-eval-broker=false"]);
    expectRun(run, [/Scheduler configuration updated!/]);
  });

  // ---- nodes --------------------------------------------------------------

  cliCase("node status", async () => {
    const run = await nomad(["node", "status"]);
    const rows = run.stdout.match(/^[0-9a-f]{8}\s+\S+\s+dc1\s+sim-\d+\s+.*\bready$/gm) ?? [];
    expectRun(run);
    if (rows.length !== 2) throw new Error(`want 2 ready nodes listed; ${describeRun(run)}`);
  });

  cliCase("node status -verbose", async () => {
    const run = await nomad(["node", "status", "-verbose"]);
    expectRun(run, [new RegExp(`^${cluster.nodeIDs[0]}\\s+.*\\bready$`, "m")]);
  });

  cliCase("node status <id>", async () => {
    const id = cluster.nodeIDs[0]!;
    const run = await nomad(["node", "status", id.slice(0, 8)]);
    expectRun(run, [
      new RegExp(`^ID\\s+= ${id}$`, "m"),
      /^Status\s+= ready$/m,
      /^Node Pool\s+= default$/m,
      /^Allocated Resources$/m,
    ]);
  });

  cliCase("node status -verbose <id>", async () => {
    const id = cluster.nodeIDs[0]!;
    const run = await nomad(["node", "status", "-verbose", id]);
    expectRun(run, [/^Drivers$/m, /^mock_driver\s+true\s+true/m, /^Attributes$/m]);
  });

  cliCase("node eligibility -disable", async () => {
    const id = cluster.nodeIDs[1]!;
    const run = await nomad(["node", "eligibility", "-disable", id]);
    expectRun(run, [new RegExp(`Node "${id}" scheduling eligibility set: ineligible for scheduling`)]);
  });

  cliCase("node eligibility -enable", async () => {
    const id = cluster.nodeIDs[1]!;
    const run = await nomad(["node", "eligibility", "-enable", id]);
    expectRun(run, [new RegExp(`Node "${id}" scheduling eligibility set: eligible for scheduling`)]);
  });

  cliCase("node drain -enable", async () => {
    // The node with the most allocations of the job: they move to the other one.
    const allocs = await runningAllocs(JOB);
    const id = cluster.nodeIDs
      .map((n) => ({ n, count: allocs.filter((a) => a.NodeID === n).length }))
      .sort((a, b) => b.count - a.count)[0]!.n;
    const run = await nomad(["node", "drain", "-enable", "-yes", "-deadline", "1m", id], MONITOR_TIMEOUT_MS);
    expectRun(run, [
      new RegExp(`Node "${id}" drain strategy set`),
      /All allocations on node "[0-9a-f-]+" have stopped/,
    ]);
  });

  cliCase("node drain -disable", async () => {
    const drained = (await getJson<{ ID: string; SchedulingEligibility: string }[]>("/v1/nodes")).find(
      (n) => n.SchedulingEligibility === "ineligible",
    );
    const id = drained?.ID ?? cluster.nodeIDs[0]!;
    const run = await nomad(["node", "drain", "-disable", "-yes", id]);
    expectRun(run, [new RegExp(`Node "${id}" drain strategy unset`)]);
    // Without -keep-ineligible the node is eligible again.
    const node = await getJson<{ SchedulingEligibility: string }>(`/v1/node/${id}`);
    expect(node.SchedulingEligibility, "eligibility after node drain -disable").toBe("eligible");
  });

  cliCase("node pool list", async () => {
    const run = await nomad(["node", "pool", "list"]);
    expectRun(run, [
      /^all\s+Node pool with all nodes in the cluster\.$/m,
      /^default\s+Default node pool\.$/m,
    ]);
  });

  // ---- namespaces -----------------------------------------------------------

  /** Later namespace cases test themselves even where `namespace apply` fails: the namespace is made over HTTP. */
  async function ensureNamespace(): Promise<void> {
    if ((await cluster.server.call(`/v1/namespace/${NAMESPACE}`)).ok) return;
    const res = await cluster.server.call(`/v1/namespace/${NAMESPACE}`, {
      method: "PUT",
      body: JSON.stringify({ Name: NAMESPACE, Description: "compat suite" }),
    });
    if (!res.ok)
      throw new Error(`could not create namespace ${NAMESPACE} over HTTP: ${res.status} ${await res.text()}`);
  }

  cliCase("namespace apply", async () => {
    const run = await nomad(["namespace", "apply", "-description", "compat suite", NAMESPACE]);
    expectRun(run, [new RegExp(`^Successfully applied namespace "${NAMESPACE}"!$`, "m")]);
  });

  cliCase("namespace list", async () => {
    await ensureNamespace();
    const run = await nomad(["namespace", "list"]);
    expectRun(run, [
      new RegExp(`^${NAMESPACE}\\s+compat suite$`, "m"),
      /^default\s+Default shared namespace$/m,
    ]);
  });

  cliCase("namespace status", async () => {
    await ensureNamespace();
    const run = await nomad(["namespace", "status", NAMESPACE]);
    expectRun(run, [new RegExp(`^Name\\s+= ${NAMESPACE}$`, "m"), /^Description\s+= compat suite$/m]);
  });

  cliCase("namespace delete", async () => {
    await ensureNamespace();
    const run = await nomad(["namespace", "delete", NAMESPACE]);
    expectRun(run, [new RegExp(`^Successfully deleted namespace "${NAMESPACE}"!$`, "m")]);
  });

  // ---- operator, servers, system, agent -------------------------------------

  cliCase("operator raft list-peers", async () => {
    const run = await nomad(["operator", "raft", "list-peers"]);
    expectRun(run, [/^Node\s+ID\s+Address\s+State\s+Voter\s+RaftProtocol$/m, /\sleader\s+true\s+\S+$/m]);
  });

  cliCase("operator autopilot get-config", async () => {
    const run = await nomad(["operator", "autopilot", "get-config"]);
    expectRun(run, [/^CleanupDeadServers = true$/m, /^LastContactThreshold = \S+$/m]);
  });

  cliCase("server members", async () => {
    const run = await nomad(["server", "members"]);
    expectRun(run, [/^Name\s+Address\s+Port\s+Status\s+Leader/m, /\salive\s+true\s/m]);
  });

  cliCase("system gc", async () => {
    // The batch job is dead and its allocations terminal: a forced GC removes
    // it. As in Nomad, the collection runs after the command returns.
    expectRun(await nomad(["system", "gc"]));
    await waitFor(`GET /v1/job/${BATCH} answering 404 after system gc`, 15_000, async () => {
      return (await cluster.server.call(`/v1/job/${BATCH}`)).status === 404;
    });
  });

  cliCase("system reconcile summaries", async () => {
    expectRun(await nomad(["system", "reconcile", "summaries"]));
  });

  cliCase("agent-info", async () => {
    const run = await nomad(["agent-info"]);
    expectRun(run, [/^nomad$/m, /^raft$/m, /^serf$/m, /^runtime$/m, /^ {2}leader = true$/m]);
  });

  cliCase("monitor", async () => {
    // Streams until interrupted: it must still be streaming after two seconds, without an error.
    const child: ChildProcess = spawn(NOMAD_BIN, ["monitor", "-log-level", "debug"], {
      env: env(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const early = await Promise.race([
      exited,
      new Promise<"running">((r) => setTimeout(() => r("running"), 2_000)),
    ]);
    child.kill("SIGINT");
    const code = early === "running" ? await exited : early;
    const run: CliRun = { args: ["monitor", "-log-level", "debug"], code, signal: null, stdout, stderr };
    if (early !== "running") throw new Error(`want it still streaming after 2 s; ${describeRun(run)}`);
    if (/Error/.test(stdout + stderr)) throw new Error(`want no error; ${describeRun(run)}`);
  });

  cliCase("status <prefix>", async () => {
    const run = await nomad(["status", JOB.slice(0, 9)]);
    expectRun(run, [new RegExp(`^ID\\s+= ${JOB}$`, "m"), /^Status\s+= running$/m]);
  });

  // ---- native service discovery (provider "nomad") ----------------------------
  // The simulated nodes run no tasks, so the test registers a service for one
  // of the job's allocations as its node's client would, over the client RPC.

  cliCase("service list", async () => {
    await registerService();
    expectRun(await nomad(["service", "list"]), [
      /^Service Name\s+Tags$/m,
      new RegExp(`^${SERVICE}\\s+\\[cli,v0\\]$`, "m"),
    ]);
  });

  cliCase("service info", async () => {
    const { AllocID } = await registerService();
    const run = await nomad(["service", "info", SERVICE]);
    expectRun(run, [
      /^Job ID\s+Address\s+Tags\s+Node ID\s+Alloc ID$/m,
      new RegExp(
        `^${JOB}\\s+10\\.0\\.0\\.9:8080\\s+\\[v0,cli\\]\\s+[0-9a-f]{8}\\s+${AllocID.slice(0, 8)}$`,
        "m",
      ),
    ]);
  });

  cliCase("service delete", async () => {
    const { ID } = await registerService();
    expectRun(await nomad(["service", "delete", SERVICE, ID]), [
      /^Successfully deleted service registration$/m,
    ]);
    expectRun(await nomad(["service", "list"]), [/^No service registrations found$/m]);
  });

  // ---- stopping the job ------------------------------------------------------

  cliCase("job stop", async () => {
    const run = await nomad(["job", "stop", JOB], MONITOR_TIMEOUT_MS);
    expectRun(run, [EVAL_COMPLETE]);
    const job = await getJson<{ Stop: boolean }>(`/v1/job/${JOB}`);
    expect(job.Stop, "Stop after job stop").toBe(true);
  });

  cliCase("job stop -purge", async () => {
    const run = await nomad(["job", "stop", "-purge", JOB], MONITOR_TIMEOUT_MS);
    expectRun(run, [EVAL_COMPLETE]);
    const res = await cluster.server.call(`/v1/job/${JOB}`);
    expect(res.status, `GET /v1/job/${JOB} after job stop -purge`).toBe(404);
  });

  it("lists as expected failures only commands of this suite", () => {
    expect(staleNames(EXPECTED_FAILURES, caseNames), "names on the list that are no case here").toEqual([]);
  });
});
