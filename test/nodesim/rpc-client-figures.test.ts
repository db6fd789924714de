import { fork } from "node:child_process";
import { describe, expect, it } from "vitest";
import { JobTexts, parseAllocsReply } from "../../src/nodesim/allocs-reply.ts";
import { Counters } from "../../src/nodesim/counters.ts";
import { RpcClient } from "../../src/nodesim/rpc-client.ts";

/**
 * The figure docs/architecture.md quotes for the simulator's client RPC
 * ("The simulator's own share"): CPU of this process per node round of a
 * placement (Node.GetClientAllocs, Alloc.GetAllocs with a real reply,
 * Node.UpdateAlloc), 1,000 nodes at once, the server in another process.
 * On demand only: NODESIM_CLIENT_FIGURES=1 npx vitest run test/nodesim/rpc-client-figures.test.ts
 */
const enabled = process.env.NODESIM_CLIENT_FIGURES === "1";
if (!enabled) console.warn("client RPC figures skipped: set NODESIM_CLIENT_FIGURES=1 to take them");

const NODES = 1_000;
const ROUNDS = 10;

const event = (type: string, ms: number) => ({
  Type: type,
  Time: ms * 1e6,
  DisplayMessage: "Task started by client",
  Details: {},
});
const update = (i: number) => ({
  Alloc: [
    {
      ID: `a-${i}`,
      NodeID: `n-${i}`,
      ClientStatus: "running",
      ClientDescription: "Tasks are running",
      TaskStates: {
        app: {
          State: "running",
          Failed: false,
          Restarts: 0,
          LastRestart: "0001-01-01T00:00:00Z",
          StartedAt: new Date().toISOString(),
          FinishedAt: "0001-01-01T00:00:00Z",
          Events: ["Received", "Task Setup", "Driver", "Started"].map((t, n) => event(t, n)),
          TaskHandle: null,
        },
      },
      DeploymentStatus: null,
      NetworkStatus: null,
    },
  ],
});

describe.runIf(enabled)("the simulator's client RPC, figures", () => {
  it("CPU per node round of GetClientAllocs, GetAllocs and UpdateAlloc", { timeout: 300_000 }, async () => {
    const server = fork(new URL("./client-cost/server.mjs", import.meta.url));
    const port = await new Promise<number>((resolve) => server.once("message", (p) => resolve(p as number)));
    const rpc = new RpcClient(`http://127.0.0.1:${port}`, new Counters(), {
      encoding: "json",
      shortSockets: 16,
    });
    const jobs = new JobTexts();
    const parse = (b: Buffer) => parseAllocsReply(b, jobs);
    const node = async (i: number, rounds: number) => {
      const token = `tok-${i}`;
      const signal = new AbortController().signal;
      for (let r = 0; r < rounds; r++) {
        const poll = { NodeID: `n-${i}`, MinQueryIndex: r, MaxQueryTime: 300e9, AllowStale: true };
        await rpc.call("Node.GetClientAllocs", poll, token, { blocking: true, signal });
        const pull = { AllocIDs: [`a-${i}`], MinQueryIndex: r, MaxQueryTime: 10e9, AllowStale: true };
        await rpc.call("Alloc.GetAllocs", pull, token, { blocking: true, signal, parse });
        await rpc.call("Node.UpdateAlloc", update(i), token);
      }
    };
    try {
      for (let i = 0; i < NODES; i++) await rpc.call("Node.Register", { Node: { ID: `n-${i}` } }, `tok-${i}`);
      await Promise.all(Array.from({ length: NODES }, (_, i) => node(i, 2)));
      const before = process.cpuUsage();
      await Promise.all(Array.from({ length: NODES }, (_, i) => node(i, ROUNDS)));
      const cpu = process.cpuUsage(before);
      const perRound = (cpu.user + cpu.system) / (NODES * ROUNDS);
      console.log(
        `client CPU per node round: ${perRound.toFixed(1)} µs (user ${(cpu.user / (NODES * ROUNDS)).toFixed(1)})`,
      );
      expect(perRound).toBeGreaterThan(0);
    } finally {
      rpc.close();
      server.kill();
    }
  });
});
