import { describe, expect, it } from "vitest";
import type { TestNode } from "../api/node-fixtures.ts";
import { useTempDirs } from "../store/helpers.ts";
import {
  type AllocView,
  clientNode,
  clusterCensus,
  getJson,
  heartbeatLoop,
  type NodeView,
  registerReadyNode,
  runJob,
  type Target,
} from "./cluster-client.ts";
import { keepAliveGet, lingeringAgent, readStreamFor, stalledUpload } from "./keep-alive-request.ts";
import { type ServeProcess, spawnServe } from "./serve-process.ts";
import { signalAndTime, tail } from "./timed-exit.ts";

const RUNS = Number(process.env.CHRONOMAD_RESTART_RUNS ?? 20);
const GRACE_MS = 2_000;
// Short TTLs: a server whose heartbeat timers ran on while it shut down, or
// that did not give restarted nodes the failover TTL, would mark them down
// within a few seconds, well inside one run.
const FLAGS = [
  "--shutdown-grace",
  `${GRACE_MS}ms`,
  "--min-heartbeat-ttl",
  "1s",
  "--heartbeat-grace",
  "1s",
  "--fsync",
  "never",
];

describe("chronomad serve restarts", () => {
  const tempDir = useTempDirs();

  it(`exits within shutdown_grace + 2 s with idle keep-alive connections and a read event stream, and its nodes stay ready (${RUNS} runs)`, async () => {
    const dir = await tempDir();
    const target: Target = { url: "" };
    let server: ServeProcess = await spawnServe(["--data-dir", dir, ...FLAGS]);
    target.url = server.url;
    const nodes: TestNode[] = [];
    const allocs: string[] = [];
    const beats = heartbeatLoop(nodes);
    const exits: number[] = [];
    try {
      for (let run = 0; run < RUNS; run++) {
        const node = clientNode(target);
        await registerReadyNode(node);
        nodes.push(node);
        allocs.push(await runJob(target, nodes, `web-${run}`));
        expect(await readStreamFor(`${target.url}/v1/event/stream?index=0`, 200)).toBeGreaterThan(0);

        const agent = lingeringAgent();
        expect(await keepAliveGet(agent, `${target.url}/v1/status/leader`)).toBe(200);
        const exit = await signalAndTime(server, GRACE_MS + 2_000);
        exits.push(exit.ms);
        agent.destroy();
        expect(exit.code, `run ${run}: ${Math.round(exit.ms)} ms\n${tail(server)}`).toBe(0);

        server = await spawnServe(["--data-dir", dir, ...FLAGS]);
        target.url = server.url;
        const seen = await getJson<NodeView[]>(target, "/v1/nodes");
        expect(seen.filter((n) => n.Status !== "ready").map((n) => `${n.ID} ${n.Status}`)).toEqual([]);
        const listed = await getJson<AllocView[]>(target, "/v1/allocations");
        expect(listed.map((a) => a.ID).sort()).toEqual([...allocs].sort());
        expect(listed.filter((a) => a.ClientStatus !== "running")).toEqual([]);
      }
      // Nothing happened later either: a whole round of heartbeats after the last restart.
      await new Promise((r) => setTimeout(r, 3_000));
      const census = await clusterCensus(target);
      expect(census.nodes.every((n) => n.endsWith(" ready"))).toBe(true);
      expect(census.allocs.every((a) => a.endsWith(" running/run"))).toBe(true);
    } finally {
      await beats.stop();
      await signalAndTime(server, GRACE_MS + 2_000);
      console.log(
        `shutdown times over ${exits.length} runs (ms): max ${Math.round(Math.max(...exits))}, ` +
          `median ${Math.round([...exits].sort((a, b) => a - b)[Math.floor(exits.length / 2)] ?? 0)}`,
      );
    }
  }, 300_000);

  it("stops its heartbeat timers first, so a request holding the shutdown for the whole grace marks no node down", async () => {
    const dir = await tempDir();
    const graceMs = 3_000;
    const flags = [...FLAGS, "--shutdown-grace", `${graceMs}ms`];
    const target: Target = { url: "" };
    let server = await spawnServe(["--data-dir", dir, ...flags]);
    target.url = server.url;
    const node = clientNode(target);
    await registerReadyNode(node);
    const alloc = await runJob(target, [node], "web");
    const beats = heartbeatLoop([node]);
    try {
      const upload = await stalledUpload(target.url);
      const exit = await signalAndTime(server, graceMs + 2_000);
      upload.close();
      expect(exit.code, tail(server)).toBe(0);
      // It waited for the request (longer than the 1-2 s TTL + 1 s grace), then cut it.
      expect(exit.ms).toBeGreaterThanOrEqual(graceMs - 100);
      expect(
        server.lines.some((l) => l.msg === "requests still running after shutdown_grace were cut off"),
      ).toBe(true);
      const steps = server.lines.filter((l) => l.msg === "shutdown step").map((l) => l.step);
      expect(steps).toEqual([
        "stopping leader services",
        "leaving the leader election",
        "stopping the scheduler threads",
        "closing the RPC port",
        "closing the HTTP API",
        "flushing the log and writing the snapshot",
        "closing the log",
      ]);
      expect(server.lines.some((l) => l.msg === "node missed its heartbeat")).toBe(false);

      server = await spawnServe(["--data-dir", dir, ...flags]);
      target.url = server.url;
      expect((await getJson<NodeView>(target, `/v1/node/${node.id}`)).Status).toBe("ready");
      expect((await getJson<AllocView>(target, `/v1/allocation/${alloc}`)).ClientStatus).toBe("running");
    } finally {
      await beats.stop();
      await signalAndTime(server, graceMs + 2_000);
    }
  }, 60_000);

  it("exits at once on a second signal, with the log flushed", async () => {
    const dir = await tempDir();
    const flags = [...FLAGS, "--shutdown-grace", "30s"];
    let server = await spawnServe(["--data-dir", dir, ...flags]);
    try {
      const put = await fetch(`${server.url}/v1/namespace/kept`, { method: "PUT", body: "{}" });
      expect(put.status).toBe(200);
      // Holds the first shutdown in its HTTP step for the whole 30 s grace.
      const upload = await stalledUpload(server.url);
      server.child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 500));
      const exit = await signalAndTime(server, 5_000, "SIGINT");
      upload.close();
      expect(exit.code, tail(server)).toBe(1);
      expect(server.lines.some((l) => l.msg === "second signal: flushing the log and exiting now")).toBe(
        true,
      );

      server = await spawnServe(["--data-dir", dir, ...flags]);
      expect((await fetch(`${server.url}/v1/namespace/kept`)).status).toBe(200);
    } finally {
      await signalAndTime(server, 10_000);
    }
  }, 60_000);
});
