import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { NodeRow } from "../projections/nodes.ts";
import { READ_ONLY_MESSAGE } from "../src/api/read-only-refusal.ts";
import { runReplay } from "../src/cli/replay-command.ts";
import { lockHolder } from "../src/log/file/process-lock.ts";
import { openLog } from "../src/log/open-log.ts";
import { VirtualClock } from "../src/util/clock.ts";
import { placeAlloc, TestNode, testJob, waitForNode } from "./api/node-fixtures.ts";
import { readStream } from "./api/plugins/event-stream-client.ts";
import { startTestServer, type TestServer } from "./server-harness.ts";

/** Short heartbeats: a server that ran its heartbeat watcher would mark the node down within seconds. */
const SHORT_TTLS = ["--min-heartbeat-ttl", "1s", "--heartbeat-grace", "1s", "--failover-heartbeat-ttl", "1s"];
/** Twice the longest a node could go unheard before a leader marked it down (TTL + stagger + grace). */
const TWICE_THE_TTL_MS = 2 * (1_000 + 1_000 + 1_000);

function sink() {
  let text = "";
  const out = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { out, text: () => text };
}

async function lastIndexOf(url: string): Promise<number> {
  const log = await openLog(url, { logger: pino({ level: "silent" }), readOnly: true });
  const last = log.lastIndex();
  await log.close();
  return last;
}

/** Lets anything a timer started reach the log and the tables. */
async function settled(server: TestServer): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
  await new Promise((r) => setTimeout(r, 100));
  await server.store.caughtUp();
}

describe("serve --read-only", () => {
  const running: TestServer[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop();
    for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
  });
  const tempDir = async () => {
    const d = await mkdtemp(join(tmpdir(), "chronomad-read-only-"));
    dirs.push(d);
    return d;
  };

  it("on a replayed copy: serves reads, history, ?at_index and the event stream, runs no leader service, appends nothing and refuses writes", async () => {
    // A history: a node that registers and becomes ready, an allocation on it, a namespace.
    const original = await startTestServer({ dataDir: await tempDir(), deps: { clock: new VirtualClock() } });
    running.push(original);
    const node = new TestNode(original);
    expect((await node.register()).status).toBe(200);
    const initializingAt = original.store.appliedIndex;
    expect((await node.heartbeat()).status).toBe(200);
    await waitForNode(original, node.id, (n) => n.Status === "ready");
    const alloc = await placeAlloc(original, { NodeID: node.id, Job: testJob() });
    expect((await original.call("/v1/namespace/forensics", { method: "PUT", body: "{}" })).status).toBe(200);
    await original.stop();
    running.splice(0);

    // Its copy, through chronomad replay.
    const copyDir = await tempDir();
    const copyLog = `file:${join(copyDir, "log")}`;
    const replayed = sink();
    const code = await runReplay(
      ["--from", `file:${join(original.dataDir, "log")}`, "--to", copyLog],
      replayed.out,
    );
    expect(code, replayed.text()).toBe(0);
    const end = await lastIndexOf(copyLog);
    expect(end).toBeGreaterThan(initializingAt);

    const clock = new VirtualClock();
    const ro = await startTestServer({
      dataDir: copyDir,
      args: ["--read-only", ...SHORT_TTLS],
      deps: { clock },
    });
    running.push(ro);
    // No lock: another process could hold the directory meanwhile.
    expect(await lockHolder(join(copyDir, "log"))).toBeUndefined();
    expect(ro.services).toEqual([]);

    // Twice the heartbeat TTL, on the server's clock, and time for anything that would follow.
    clock.advance(TWICE_THE_TTL_MS);
    await settled(ro);
    clock.advance(TWICE_THE_TTL_MS);
    await settled(ro);

    const nodes = (await (await ro.call("/v1/nodes")).json()) as NodeRow[];
    expect(nodes.map((n) => [n.ID, n.Status])).toEqual([[node.id, "ready"]]);
    expect(ro.log.lastIndex()).toBe(end);
    expect(ro.store.appliedIndex).toBe(end);

    // Reads.
    const allocs = (await (await ro.call(`/v1/node/${node.id}/allocations`)).json()) as { ID: string }[];
    expect(allocs.map((a) => a.ID)).toEqual([alloc.ID]);
    expect((await ro.call(`/v1/allocation/${alloc.ID}`)).status).toBe(200);
    const namespaces = (await (await ro.call("/v1/namespaces")).json()) as { Name: string }[];
    expect(namespaces.map((n) => n.Name)).toContain("forensics");
    const history = (await (await ro.call(`/v1/node/${node.id}/history`)).json()) as {
      Field: string;
      To: unknown;
    }[];
    expect(history.filter((h) => h.Field === "Status").map((h) => h.To)).toEqual(["ready"]);
    const past = await ro.call(`/v1/node/${node.id}?at_index=${initializingAt}`);
    expect(past.status).toBe(200);
    expect(((await past.json()) as NodeRow).Status).toBe("initializing");
    const stream = await readStream(`${ro.url}/v1/event/stream?index=0`, (frames) =>
      frames.some((f) => f.Events?.some((e) => e.Topic === "Allocation")),
    );
    expect(stream.status).toBe(200);
    expect(stream.frames.some((f) => f.Events?.some((e) => e.Topic === "Node" && e.Key === node.id))).toBe(
      true,
    );
    // Reads that Nomad sends as POST or PUT.
    const search = await ro.call("/v1/search", {
      method: "POST",
      body: JSON.stringify({ Prefix: node.id.slice(0, 6), Context: "nodes" }),
    });
    expect(search.status).toBe(200);

    // It says what it is, and who answers for it.
    const self = (await (await ro.call("/v1/agent/self")).json()) as {
      config: { ReadOnly: boolean };
      stats: { nomad: { leader: string } };
    };
    expect(self.config.ReadOnly).toBe(true);
    expect(self.stats.nomad.leader).toBe("false");
    expect(await (await ro.call("/v1/status/leader")).json()).toBe(ro.address);
    expect((await ro.call("/v1/agent/health")).status).toBe(200);

    // Writes are refused with the reason, and nothing is appended.
    const refusals = [
      await ro.call("/v1/jobs", {
        method: "PUT",
        body: JSON.stringify({ Job: { ID: "web", Name: "web", Type: "service", TaskGroups: [] } }),
      }),
      await ro.call(`/v1/node/${node.id}/drain`, {
        method: "POST",
        body: JSON.stringify({ DrainSpec: { Deadline: 0 } }),
      }),
      await ro.call("/v1/namespace/forensics", { method: "DELETE" }),
      await ro.call("/v1/system/gc", { method: "PUT" }),
    ];
    const heartbeat = await new TestNode(ro, { id: node.id, secret: node.secret }).heartbeat();
    for (const res of refusals) {
      expect(res.status).toBe(403);
      expect(await res.text()).toBe(READ_ONLY_MESSAGE);
    }
    expect(heartbeat.status).toBe(403);
    expect(heartbeat.text).toBe(READ_ONLY_MESSAGE);
    // A wrong method is still answered as on any server.
    expect((await ro.call("/v1/agent/self", { method: "PUT" })).status).toBe(405);
    await settled(ro);
    expect(ro.log.lastIndex()).toBe(end);

    await ro.stop();
    running.splice(0);
    expect(await lastIndexOf(copyLog)).toBe(end);

    // The same copy served normally: its leader marks the silent node down on
    // the same clock, so the read-only server's quiet above is no accident.
    const controlClock = new VirtualClock();
    const control = await startTestServer({
      dataDir: copyDir,
      args: SHORT_TTLS,
      deps: { clock: controlClock },
    });
    running.push(control);
    controlClock.advance(TWICE_THE_TTL_MS);
    expect((await waitForNode(control, node.id, (n) => n.Status === "down")).Status).toBe("down");
    expect(control.log.lastIndex()).toBeGreaterThan(end);
  });

  it("beside a live server on the same file log: follows what it writes, and still refuses writes", async () => {
    const live = await startTestServer({ dataDir: await tempDir() });
    running.push(live);
    expect((await live.call("/v1/namespace/first", { method: "PUT", body: "{}" })).status).toBe(200);
    const ro = await startTestServer({
      args: ["--read-only", "--log", `file:${join(live.dataDir, "log")}`],
    });
    running.push(ro);
    const names = async (path: string) =>
      ((await (await ro.call(path)).json()) as { Name: string }[]).map((n) => n.Name);
    expect(await names("/v1/namespaces")).toContain("first");
    const seen = Number((await ro.call("/v1/namespaces")).headers.get("x-nomad-index"));

    expect((await live.call("/v1/namespace/second", { method: "PUT", body: "{}" })).status).toBe(200);
    // A blocking query on the read-only server answers once the live server's write reaches it.
    let index = seen;
    for (
      let i = 0;
      i < 20 && !(await names(`/v1/namespaces?index=${index}&wait=5s`)).includes("second");
      i++
    ) {
      index = Number((await ro.call("/v1/namespaces")).headers.get("x-nomad-index"));
    }
    expect(await names("/v1/namespaces")).toContain("second");
    expect(ro.store.appliedIndex).toBe(live.log.lastIndex());

    const refused = await ro.call("/v1/namespace/third", { method: "PUT", body: "{}" });
    expect(refused.status).toBe(403);
    expect(live.log.lastIndex()).toBe(ro.log.lastIndex());
  });
});
