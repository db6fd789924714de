import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAST_HEARTBEATS } from "../../nodesim/fixtures.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { type CliRun, describeRun, expectRun, runNomad } from "../cli/cli-run.ts";
import { cleanNomadEnv } from "../compat-cluster.ts";
import { agentLogTails, ClientAgent, hasNomad, NOMAD_BIN, stopAllAgents, waitFor } from "./client-agent.ts";
import { Api, alive, describeAllocs, serviceJob } from "./fixtures.ts";

/**
 * The `nomad` commands that reach a client agent (alloc logs/fs/exec/
 * status -stats/signal/restart, node meta, node status -stats, service,
 * monitor -node-id, operator debug),
 * the real 1.6.1 CLI against chronomad with a real 1.6.1 client agent.
 *
 * The CLI's api package sends some of these calls (fs cat/readat/stream,
 * logs, exec) to the node's advertised HTTP address first and only falls
 * back to the server on a network error; the rest always go to the server.
 * The node advertises a gate in this process instead of its own HTTP port,
 * so every check runs twice: with the gate passing connections through to
 * the agent, and with it resetting them, when only chronomad's path to the
 * agent (its yamux session) can answer. Each run also checks where its
 * requests went, from the request lines seen by that gate and by another
 * in front of chronomad.
 */

if (!hasNomad)
  console.warn(`nomad CLI with a client agent skipped: no nomad binary at ${NOMAD_BIN} (set NOMAD_BIN)`);

const COMMAND_TIMEOUT_MS = 30_000;
const JOB = "cli-client";
const TASK = "main";
const SERVICE = "cli-client-web";
const FILE = "local/marker.txt";

/**
 * Prints known lines, writes a file in its task dir, answers SIGUSR1 with a
 * line, and runs on. The pid line tells a restarted task from the old one.
 * (Nomad interpolates ${NOMAD_ALLOC_ID}; $$ is the shell's.)
 */
const SCRIPT = [
  `trap 'echo "got-usr1 in pid $$"' USR1`,
  `echo "hello-stdout first pid=$$"`,
  `echo "hello-stderr only" >&2`,
  `echo "file-content \${NOMAD_ALLOC_ID}" > ${FILE}`,
  `echo "hello-stdout last"`,
  // sh runs the trap once the foreground sleep returns: a signal is answered within a second.
  `while true; do sleep 1; done`,
].join("\n");

function cliJob() {
  const job = serviceJob(JOB, 1, { name: TASK, script: SCRIPT });
  const [group] = job.TaskGroups;
  const [task] = group!.Tasks;
  // Provider "nomad" with a fixed address and port: no network to allocate.
  const service = {
    Name: SERVICE,
    Provider: "nomad",
    PortLabel: "8080",
    Address: "127.0.0.1",
    Tags: ["cli", "real"],
  };
  return { ...job, TaskGroups: [{ ...group!, Tasks: [{ ...task!, Services: [service] }] }] };
}

interface TaskStateView {
  readonly State: string;
  readonly Restarts?: number;
}

/**
 * A TCP pass-through that notes the HTTP request lines sent through it.
 * The node advertises one as its HTTP address: open, it pipes to the
 * agent's real HTTP port; closed, it resets each connection at once (a
 * network error, on which the CLI turns to the server). Another, always
 * open, stands before chronomad as NOMAD_ADDR, so a websocket (exec) is
 * seen as well as a plain request.
 */
class TcpGate {
  open = true;
  /** Request targets ("/v1/…?…") of the requests passed through, in order. */
  readonly requests: string[] = [];
  refused = 0;
  target: { host: string; port: number } | undefined;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly address: string,
  ) {}

  static async start(): Promise<TcpGate> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    const addr = server.address();
    if (typeof addr !== "object" || !addr) throw new Error("the gate has no address");
    const gate = new TcpGate(server, `127.0.0.1:${addr.port}`);
    server.on("connection", (socket) => gate.accept(socket));
    return gate;
  }

  get url(): string {
    return `http://${this.address}`;
  }

  private accept(socket: Socket): void {
    if (!this.open || !this.target) {
      this.refused++;
      socket.resetAndDestroy();
      return;
    }
    const upstream = connect(this.target.port, this.target.host);
    this.sockets.add(socket).add(upstream);
    const end = () => {
      socket.destroy();
      upstream.destroy();
      this.sockets.delete(socket);
      this.sockets.delete(upstream);
    };
    // Keep-alive puts several requests on one connection; a line may span chunks.
    let partial = "";
    socket.on("data", (chunk: Buffer) => {
      const lines = (partial + chunk.toString("latin1")).split("\r\n");
      partial = (lines.pop() ?? "").slice(-4096);
      for (const line of lines) {
        const m = /^[A-Z]+ (\/\S*) HTTP\/1\.[01]$/.exec(line);
        if (m) this.requests.push(m[1]!);
      }
    });
    socket.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    socket.pipe(upstream).pipe(socket);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const MODES = [
  { key: "direct", name: "node address reachable", open: true },
  { key: "server", name: "node address unreachable: through chronomad", open: false },
] as const;

describe.skipIf(!hasNomad)(
  "the nomad CLI's client commands against chronomad and a real client agent",
  () => {
    let s: TestServer;
    let api: Api;
    let agent: ClientAgent;
    /** The node's advertised HTTP address. */
    let gate: TcpGate;
    /** NOMAD_ADDR: chronomad, through a gate that stays open. */
    let front: TcpGate;
    let nodeID: string;
    let allocID: string;

    beforeAll(async () => {
      s = await startTestServer({ args: [...FAST_HEARTBEATS, "--heartbeat-grace", "5s", "--enable-debug"] });
      api = new Api(s.url);
      front = await TcpGate.start();
      front.target = { host: "127.0.0.1", port: Number(new URL(s.url).port) };
      gate = await TcpGate.start();
      agent = await ClientAgent.start({
        servers: [s.rpcAddress],
        name: "cli-client-1",
        serverUrl: s.url,
        advertiseHttp: gate.address,
        // Without ACLs, an agent serves its host data and profiles only with enable_debug.
        extraHcl: "enable_debug = true\n",
      });
      const [host, port] = agent.httpAddr.split(":");
      gate.target = { host: host!, port: Number(port) };
      nodeID = await waitFor(
        async () => {
          const id = await agent.nodeID();
          const node = id ? await api.node(id) : undefined;
          return node?.Status === "ready" ? node.ID : undefined;
        },
        { what: "the client's node to be ready in chronomad", timeoutMs: 90_000, everyMs: 100 },
      );
      expect((await api.node(nodeID))?.HTTPAddr).toBe(gate.address);

      await api.register(cliJob());
      allocID = await waitFor(
        async () => {
          const [a] = await api.allocs(JOB);
          return a?.ClientStatus === "running" && stdoutFile(a.ID).includes("hello-stdout last")
            ? a.ID
            : undefined;
        },
        {
          what: "the task running and printing",
          timeoutMs: 90_000,
          detail: async () => describeAllocs(await api.allocs(JOB)),
        },
      );
      await waitFor(async () => (await api.get<unknown[]>(`/v1/service/${SERVICE}`)).length === 1, {
        what: `the client to register ${SERVICE}`,
        timeoutMs: 60_000,
        detail: async () => `${describeAllocs(await api.allocs(JOB))}\n${agentLogTails()}`,
      });
    }, 240_000);

    afterAll(async () => {
      // Kills what the agent left behind too (its tasks, their log monitors) and unmounts its tmpfs.
      await stopAllAgents();
      await gate?.close();
      await front?.close();
      await s?.stop();
    });

    /** The task's stdout as the client wrote it, read from its alloc dir (for waiting, not checking). */
    const stdoutFile = (id: string) => {
      const f = join(agent.dataDir, "alloc", id, "alloc", "logs", `${TASK}.stdout.0`);
      return existsSync(f) ? readFileSync(f, "utf8") : "";
    };
    const pids = (text: string) => [...text.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1]));
    const taskState = async () =>
      (await api.get<{ TaskStates?: Record<string, TaskStateView> | null }>(`/v1/allocation/${allocID}`))
        .TaskStates?.[TASK];

    const nomad = (args: readonly string[]) =>
      runNomad(args, {
        cwd: agent.dataDir,
        env: cleanNomadEnv({ NOMAD_ADDR: front.url }),
        timeout: COMMAND_TIMEOUT_MS,
      });

    /**
     * Runs `nomad args…` and checks where its client calls went. `direct`:
     * the path the CLI tries on the node first — through the open gate, or
     * refused by the closed one and then answered by chronomad. `server`:
     * paths the CLI always asks chronomad for. With the gate closed nothing
     * may have passed it.
     */
    async function routed(
      open: boolean,
      args: readonly string[],
      route: { readonly direct?: RegExp; readonly server?: readonly RegExp[] } = {},
    ): Promise<CliRun> {
      const passed = gate.requests.length;
      const refused = gate.refused;
      const served = front.requests.length;
      const run = await nomad(args);
      const toNode = gate.requests.slice(passed);
      const toServer = front.requests.slice(served);
      const where = () =>
        `${describeRun(run)}\n--- to the node: ${JSON.stringify(toNode)}, refused ${
          gate.refused - refused
        }\n--- to chronomad: ${JSON.stringify(toServer)}`;
      const toChronomad = [...(route.server ?? []), ...(!open && route.direct ? [route.direct] : [])];
      for (const p of toChronomad)
        if (!toServer.some((u) => p.test(u)))
          throw new Error(`want the CLI to ask chronomad for ${p}; ${where()}`);
      if (open) {
        if (route.direct && !toNode.some((u) => route.direct!.test(u)))
          throw new Error(`want the CLI to go to the node for ${route.direct}; ${where()}`);
      } else {
        if (toNode.length > 0) throw new Error(`the closed gate passed a request; ${where()}`);
        if (route.direct && gate.refused === refused)
          throw new Error(`want the CLI to try the node first for ${route.direct}; ${where()}`);
      }
      return run;
    }

    for (const mode of MODES) {
      describe(mode.name, () => {
        const via = (args: readonly string[], route?: Parameters<typeof routed>[2]) =>
          routed(mode.open, args, route);
        beforeAll(() => {
          gate.open = mode.open;
        });

        it("alloc logs (stdout, -stderr, -tail -n 1)", async () => {
          const logs = new RegExp(`^/v1/client/fs/logs/${allocID}\\?`);
          const out = await via(["alloc", "logs", allocID], { direct: logs });
          expectRun(out, [/^hello-stdout first pid=\d+$/m, /^hello-stdout last$/m]);
          expect(out.stdout).not.toContain("hello-stderr");

          const err = await via(["alloc", "logs", "-stderr", allocID], { direct: logs });
          expectRun(err, [/^hello-stderr only$/m]);
          expect(err.stdout).not.toContain("hello-stdout");

          const tail = await via(["alloc", "logs", "-tail", "-n", "1", allocID], { direct: logs });
          expectRun(tail);
          expect(tail.stdout.trim()).toBe("hello-stdout last");
        });

        it("alloc fs: a directory, then a file", async () => {
          const fs = (op: string) => new RegExp(`^/v1/client/fs/${op}/${allocID}\\?`);
          const dir = await via(["alloc", "fs", allocID, `${TASK}/local`], {
            server: [fs("stat"), fs("ls")],
          });
          expectRun(dir, [/^Mode\s+Size\s+Modified Time\s+Name$/m, /^-rw-\S+\s+\d+ B\s+.*\bmarker\.txt$/m]);

          const file = await via(["alloc", "fs", allocID, `${TASK}/${FILE}`], {
            server: [fs("stat")],
            direct: fs("cat"),
          });
          expectRun(file);
          expect(file.stdout.trim()).toBe(`file-content ${allocID}`);
        });

        it("alloc exec: output and exit status", async () => {
          const exec = new RegExp(`^/v1/client/allocation/${allocID}/exec\\?`);
          const hi = await via(["alloc", "exec", "-task", TASK, allocID, "echo", "hi"], { direct: exec });
          expectRun(hi);
          expect(hi.stdout.trim()).toBe("hi");

          const three = await via(
            ["alloc", "exec", "-task", TASK, allocID, "/bin/sh", "-c", "echo bye >&2; exit 3"],
            {
              direct: exec,
            },
          );
          expectRun(three, [/^bye$/m], 3);
        });

        it("alloc status -stats", async () => {
          const run = await via(["alloc", "status", "-stats", allocID], {
            server: [new RegExp(`^/v1/client/allocation/${allocID}/stats`)],
          });
          expectRun(run, [
            /^Task Resources:$/m,
            // used/allocated: live figures, not just the allocation's.
            /^\d+\/50 MHz\s+\S+ \S+\/32 MiB\s/m,
            /^Memory Stats$/m,
            /^CPU Stats$/m,
          ]);
          expect(run.stderr).not.toMatch(/Couldn't retrieve stats/);
        });

        it("alloc signal -s SIGUSR1: the task's trap prints its line", async () => {
          const before = stdoutFile(allocID).match(/got-usr1/g)?.length ?? 0;
          const run = await via(["alloc", "signal", "-s", "SIGUSR1", allocID], {
            server: [new RegExp(`^/v1/client/allocation/${allocID}/signal`)],
          });
          expectRun(run);
          await waitFor(() => (stdoutFile(allocID).match(/got-usr1/g)?.length ?? 0) > before, {
            what: "the task to print its SIGUSR1 line",
            timeoutMs: 15_000,
          });
          const logs = await nomad(["alloc", "logs", allocID]);
          expectRun(logs);
          expect(logs.stdout.match(/^got-usr1 in pid \d+$/gm)?.length).toBe(before + 1);
        });

        it("alloc restart: a new task process, one more restart", async () => {
          const before = await taskState();
          const oldPids = pids(stdoutFile(allocID));
          const oldPid = oldPids.at(-1)!;
          const run = await via(["alloc", "restart", allocID], {
            server: [new RegExp(`^/v1/client/allocation/${allocID}/restart`)],
          });
          expectRun(run);
          const newPid = await waitFor(
            () => {
              const now = pids(stdoutFile(allocID));
              return now.length > oldPids.length &&
                stdoutFile(allocID).trimEnd().endsWith("hello-stdout last")
                ? now.at(-1)
                : undefined;
            },
            { what: "the restarted task to print a new pid", timeoutMs: 30_000 },
          );
          expect(newPid).not.toBe(oldPid);
          expect(alive(oldPid)).toBe(false);
          expect(alive(newPid)).toBe(true);
          await waitFor(
            async () => {
              const st = await taskState();
              return st?.State === "running" && (st.Restarts ?? 0) === (before?.Restarts ?? 0) + 1;
            },
            {
              what: "chronomad to show one more restart and the task running",
              timeoutMs: 30_000,
              detail: async () => JSON.stringify(await taskState()),
            },
          );
        });

        it("node meta apply, then node meta read", async () => {
          const key = `cli_${mode.key}`;
          const meta = /^\/v1\/client\/metadata(\?|$)/;
          expectRun(
            await via(["node", "meta", "apply", "-node-id", nodeID, `${key}=v-${mode.key}`], {
              server: [meta],
            }),
          );
          const read = await via(["node", "meta", "read", "-node-id", nodeID], { server: [meta] });
          expectRun(read, [/^Dynamic Meta$/m, new RegExp(`^${key}\\s+= v-${mode.key}$`, "m")]);
          // The client sends its node again with the new meta.
          await waitFor(async () => (await api.node(nodeID))?.Meta?.[key] === `v-${mode.key}`, {
            what: `chronomad's node to carry ${key}`,
            timeoutMs: 30_000,
          });
        });

        it("node status -stats and -verbose", async () => {
          const stats = await via(["node", "status", "-stats", nodeID], {
            server: [/^\/v1\/client\/stats\?/, new RegExp(`^/v1/client/allocation/${allocID}/stats`)],
          });
          expectRun(stats, [
            /^Uptime\s+= \S+/m,
            /^Allocation Resource Utilization$/m,
            /^Host Resource Utilization$/m,
            /^CPU Stats$/m,
            /^Memory Stats$/m,
            /^Disk Stats$/m,
          ]);
          expect(stats.stderr).not.toMatch(/error fetching node stats/);

          const verbose = await via(["node", "status", "-verbose", nodeID], {
            server: [/^\/v1\/client\/stats\?/],
          });
          expectRun(verbose, [
            new RegExp(`^ID\\s+= ${nodeID}$`, "m"),
            /^nomad\.version\s+= 1\.6\.1$/m,
            new RegExp(`^cli_${mode.key}\\s+= v-${mode.key}$`, "m"),
            /^Host Resource Utilization$/m,
          ]);
        });

        it("service list and service info", async () => {
          expectRun(await via(["service", "list"]), [new RegExp(`^${SERVICE}\\s+\\[cli,real\\]$`, "m")]);
          expectRun(await via(["service", "info", SERVICE]), [
            new RegExp(
              `^${JOB}\\s+127\\.0\\.0\\.1:8080\\s+\\[cli,real\\]\\s+${nodeID.slice(0, 8)}\\s+${allocID.slice(0, 8)}$`,
              "m",
            ),
          ]);
        });
      });
    }

    it("monitor -node-id: the client agent's own log, streamed through chronomad", async () => {
      const args = ["monitor", "-node-id", nodeID, "-log-level", "debug"];
      const child = spawn(NOMAD_BIN, args, {
        cwd: agent.dataDir,
        env: cleanNomadEnv({ NOMAD_ADDR: front.url }),
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const served = front.requests.length;
      try {
        await waitFor(() => front.requests.slice(served).some((u) => u.startsWith("/v1/agent/monitor?")), {
          what: "the CLI to ask chronomad for the monitor",
          timeoutMs: 15_000,
        });
        // A signal is a task event, which the client's task runner logs (at info).
        expectRun(await nomad(["alloc", "signal", "-s", "SIGUSR1", allocID]));
        await waitFor(
          () => /\[INFO\] +client\.alloc_runner\.task_runner: Task event: .*type=Signaling/.test(stdout),
          {
            what: "the client agent's task event in the monitor's output",
            timeoutMs: 15_000,
            detail: () => `--- stdout:\n${stdout}\n--- stderr:\n${stderr}`,
          },
        );
      } finally {
        child.kill("SIGINT");
      }
      expect(front.requests.slice(served).find((u) => u.startsWith("/v1/agent/monitor?"))).toContain(
        `node_id=${nodeID}`,
      );
      expect(stderr).not.toMatch(/Error/);
    });

    it("operator debug: the server's and the client agent's host data and profiles", async () => {
      const out = await mkdtemp(join(tmpdir(), "chronomad-debug-"));
      try {
        const run = await nomad([
          "operator",
          "debug",
          `-node-id=${nodeID}`,
          "-server-id=all",
          "-duration=2s",
          "-interval=1s",
          "-pprof-duration=1s",
          `-output=${out}`,
        ]);
        expectRun(run, [/^Created debug directory: /m]);
        const [capture] = readdirSync(out);
        const dir = join(out, capture!);
        const host = (path: string) =>
          JSON.parse(readFileSync(join(dir, path, "agent-host.json"), "utf8")) as {
            AgentID: string;
            HostData: { OS: string; Environment: Record<string, string> };
          };
        // The client agent answered for itself (Agent.Host), through chronomad.
        expect(host(`client/${nodeID}`).AgentID).toBe(nodeID);
        const [server] = readdirSync(join(dir, "server"));
        expect(host(`server/${server}`).AgentID).toBe(server);
        expect(host(`server/${server}`).HostData.OS).toMatch(/ Linux /);
        // Go profiles from the client agent; V8's from chronomad, where Node.js has them.
        for (const file of ["profile_0000.prof", "heap.prof", "goroutine.prof", "goroutine-debug2.txt"]) {
          expect(statSync(join(dir, "client", nodeID, file)).size, file).toBeGreaterThan(0);
        }
        for (const file of ["profile_0000.prof", "heap.prof"]) {
          expect(statSync(join(dir, "server", server!, file)).size, file).toBeGreaterThan(0);
        }
        expect(run.stderr).not.toMatch(/client\/[^:]*: Failed/);
      } finally {
        await rm(out, { recursive: true, force: true });
      }
    });

    it("called only RPC methods chronomad serves", async () => {
      const text = await (await s.call("/v1/metrics?format=prometheus")).text();
      expect(text.split("\n").filter((l) => l.startsWith("chronomad_rpc_unknown_method{"))).toEqual([]);
      expect(agent.logText()).not.toMatch(/rpc: can't find (service|method)/);
    });
  },
);
