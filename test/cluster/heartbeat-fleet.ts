import type { TestNode } from "../api/node-fixtures.ts";
import { clientNode, registerReadyNode, type Target } from "../cli/cluster-client.ts";
import type { Cluster } from "./cluster-fixture.ts";

/** What the fleet saw during a window: every heartbeat's latency, and the calls that failed. */
export interface FleetWindow {
  readonly latenciesMs: number[];
  failed: number;
  readonly reasons: Map<string, number>;
}

/**
 * Client nodes that heartbeat every `everyMs` as Nomad clients do: each
 * talks to one server and, when a call fails (the server went away, or
 * could not reach the leader), moves on to the next server in the list and
 * tries again at once. Every call is timed into the current window.
 */
export class HeartbeatFleet {
  readonly nodes: TestNode[] = [];
  private readonly targets: Target[] = [];
  private running = true;
  private loops: Promise<void>[] = [];
  window: FleetWindow = newWindow();

  constructor(
    private readonly cluster: Cluster,
    count: number,
    private readonly everyMs: number,
  ) {
    for (let i = 0; i < count; i++) {
      const target = { url: cluster.members[i % cluster.members.length]!.url };
      this.targets.push(target);
      this.nodes.push(clientNode(target));
    }
  }

  /**
   * Starts every node: it registers (spread over a second), then heartbeats.
   * Resolves once every node is registered and ready.
   */
  async start(): Promise<void> {
    const registered = this.nodes.map(async (node, i) => {
      await sleep((i * 1_000) / this.nodes.length);
      await registerReadyNode(node);
    });
    this.loops = registered.map((done, i) => done.then(() => this.beat(this.nodes[i]!, this.targets[i]!, i)));
    await Promise.all(registered);
  }

  /** Starts a new window and returns the one that ends. */
  cut(): FleetWindow {
    const ended = this.window;
    this.window = newWindow();
    return ended;
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.allSettled(this.loops);
  }

  private async beat(node: TestNode, target: Target, i: number): Promise<void> {
    let server = i % this.cluster.members.length;
    let ttlMs = this.everyMs;
    while (this.running) {
      // As a Nomad client: the next heartbeat well inside the TTL the server gave.
      await sleep(Math.min(this.everyMs, ttlMs / 2));
      if (!this.running) break;
      const t0 = performance.now();
      let failure = "";
      try {
        const res = await node.heartbeat();
        if (res.status !== 200) failure = `${res.status} ${res.text.slice(0, 60)}`;
        else ttlMs = Number(res.body.HeartbeatTTL) / 1e6 || ttlMs;
      } catch (err) {
        failure =
          (err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : String(err);
      }
      const w = this.window;
      if (!failure) {
        w.latenciesMs.push(performance.now() - t0);
        continue;
      }
      w.failed++;
      w.reasons.set(failure, (w.reasons.get(failure) ?? 0) + 1);
      // On to the next server in the list, and again almost at once.
      server = (server + 1) % this.cluster.members.length;
      target.url = this.cluster.members[server]!.url;
      ttlMs = 100;
    }
  }
}

function newWindow(): FleetWindow {
  return { latenciesMs: [], failed: 0, reasons: new Map() };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
