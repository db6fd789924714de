import { type ChildProcess, fork } from "node:child_process";
import { join } from "node:path";
import { NODE_FLAGS } from "../cli/node-flags.ts";
import type { Command, Reply } from "./event-stream-server.ts";

const ROOT = join(import.meta.dirname, "../..");
const SERVER_ENTRY = join(import.meta.dirname, "event-stream-server.ts");

/** The event-stream benchmark's server (event-stream-server.ts) in its own process, driven over IPC. */
export class BenchServer {
  url = "";
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private stderr = "";

  private constructor(private readonly child: ChildProcess) {}

  static async start(): Promise<BenchServer> {
    const child = fork(SERVER_ENTRY, [], {
      cwd: ROOT,
      // The V8 flags of a real server, and gc() for settled memory figures.
      execArgv: [...NODE_FLAGS, "--expose-gc", "--import", "tsx"],
      env: { ...process.env, MSGPACKR_NATIVE_ACCELERATION_DISABLED: "true" },
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
    const server = new BenchServer(child);
    child.stderr!.on("data", (d) => {
      server.stderr = (server.stderr + String(d)).slice(-4000);
    });
    child.on("message", (m: Reply) => {
      const p = server.pending.get(m.id);
      server.pending.delete(m.id);
      if (m.error) p?.reject(new Error(`event-stream server: ${m.error}`));
      else p?.resolve(m.value);
    });
    child.on("exit", (code) => {
      const err = new Error(`the event-stream server exited with ${code}: ${server.stderr}`);
      for (const p of server.pending.values()) p.reject(err);
      server.pending.clear();
    });
    // Reply 0 is the server's own, once it serves.
    server.url = await server.reply<string>(0);
    return server;
  }

  call<T>(command: Command): Promise<T> {
    const id = this.nextId++;
    const reply = this.reply<T>(id);
    this.child.send({ ...command, id });
    return reply;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    await this.call({ op: "stop" }).catch(() => this.child.kill("SIGKILL"));
    await exited;
  }

  private reply<T>(id: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
    });
  }
}
