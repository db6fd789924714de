import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, expect } from "vitest";
import { TestNode } from "../api/node-fixtures.ts";
import { type ServeProcess, spawnServe } from "../cli/serve-process.ts";
import type { TestServer } from "../server-harness.ts";
import { eventually } from "./eventually.ts";

/**
 * The topics a test file's clusters use, deleted with their leader topics
 * once the file's tests are done. Push each topic as it is created.
 */
export function useClusterTopics(brokers: string): string[] {
  const topics: string[] = [];
  afterAll(async () => {
    const admin = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: topics.flatMap((t) => [t, `${t}.leader`]) }).catch(() => undefined);
    await admin.disconnect();
  });
  return topics;
}

export interface Member {
  readonly name: string;
  /** host:port, as the server advertises it; a restart keeps it. */
  readonly address: string;
  readonly url: string;
  process: ServeProcess;
  readonly dataDir: string;
  alive: boolean;
}

export interface StateHash {
  readonly Index: number;
  readonly Hash: string;
  readonly LeadershipEpoch: number;
  readonly Leader: string;
}

/**
 * Several `chronomad serve` processes on one log, each with its own data dir
 * and an ephemeral HTTP port. For tests that kill servers for real.
 */
export class Cluster {
  private constructor(
    readonly members: Member[],
    private readonly logUrl: string,
    private readonly extraArgs: readonly string[],
  ) {}

  static async start(logUrl: string, names: readonly string[], extraArgs: string[] = []): Promise<Cluster> {
    const members = await Promise.all(
      names.map(async (name) => {
        const dataDir = await mkdtemp(join(tmpdir(), `chronomad-${name}-`));
        const process = await spawnMember(logUrl, name, dataDir, extraArgs);
        return {
          name,
          address: process.url.slice("http://".length),
          url: process.url,
          process,
          dataDir,
          alive: true,
        };
      }),
    );
    return new Cluster(members, logUrl, extraArgs);
  }

  /**
   * Starts a stopped member again, with its data dir, name and HTTP
   * address (its clients reconnect where they were).
   */
  async restart(member: Member): Promise<void> {
    if (member.alive) throw new Error(`${member.name} is still running`);
    member.process = await spawnMember(this.logUrl, member.name, member.dataDir, [
      ...this.extraArgs,
      "--http-addr",
      member.address,
    ]);
    member.alive = true;
  }

  alive(): Member[] {
    return this.members.filter((m) => m.alive);
  }

  byAddress(address: string): Member | undefined {
    return this.members.find((m) => m.address === address);
  }

  async json<T>(member: Member, path: string): Promise<T> {
    const res = await fetch(member.url + path);
    if (!res.ok) throw new Error(`${member.name} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }

  /**
   * Waits until every live server names the same live leader and lists
   * exactly the live servers as peers; returns the leader.
   */
  async agreedLeader(timeoutMs = 90_000): Promise<Member> {
    return eventually(async () => {
      const alive = this.alive();
      const expectedPeers = alive.map((m) => m.address).sort();
      const leaders = new Set<string>();
      for (const m of alive) {
        leaders.add(await this.json<string>(m, "/v1/status/leader"));
        expect(await this.json<string[]>(m, "/v1/status/peers")).toEqual(expectedPeers);
      }
      expect(leaders.size).toBe(1);
      const leader = this.byAddress([...leaders][0]!);
      expect(leader?.alive).toBe(true);
      return leader!;
    }, timeoutMs);
  }

  /** Every live server's state hash, once they have all applied the same records. */
  async agreedStateHash(timeoutMs = 60_000): Promise<StateHash> {
    return eventually(async () => {
      const alive = this.alive();
      const first = await Promise.all(alive.map((m) => this.json<StateHash>(m, "/v1/operator/state-hash")));
      const index = Math.max(...first.map((h) => h.Index));
      const hashes = await Promise.all(
        alive.map((m) => this.json<StateHash>(m, `/v1/operator/state-hash?index=${index}&wait=10s`)),
      );
      for (const h of hashes) expect(h).toEqual(hashes[0]);
      return hashes[0]!;
    }, timeoutMs);
  }

  /** A simulated Nomad client that talks to `member` (the same node through another server: pass its id and secret). */
  client(member: Member, node?: { id: string; secret: string }): TestNode {
    // TestNode only ever calls `call`.
    const server = { call: (path: string, init?: RequestInit) => fetch(member.url + path, init) };
    return new TestNode(server as unknown as TestServer, node);
  }

  /** SIGKILL: no shutdown, no leaving the election; the others must notice on their own. */
  async kill(member: Member): Promise<void> {
    member.alive = false;
    member.process.child.kill("SIGKILL");
    await member.process.exited;
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.members.map(async (m) => {
        if (m.alive) {
          m.alive = false;
          m.process.child.kill("SIGTERM");
          await m.process.exited;
        }
        await rm(m.dataDir, { recursive: true, force: true });
      }),
    );
  }
}

function spawnMember(
  logUrl: string,
  name: string,
  dataDir: string,
  extraArgs: readonly string[],
): Promise<ServeProcess> {
  return spawnServe(["--log", logUrl, "--data-dir", dataDir, "--server-name", name, ...extraArgs], {
    CHRONOMAD_LOG_LEVEL: "info",
  });
}

/** Acknowledged writes: what callers were told succeeded, and at which index. */
export interface Acked {
  readonly name: string;
  readonly index: number;
  readonly via: string;
}

/**
 * Writers that create namespaces through the live servers, round robin,
 * until stopped. A write counts as acknowledged only on a 200; refused
 * connections and errors from a dying server are expected and not counted.
 */
export class NamespaceWriters {
  readonly acked: Acked[] = [];
  failed = 0;
  private running = true;
  private readonly done: Promise<void>;

  constructor(cluster: Cluster, writers: number) {
    this.done = Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let k = 0; this.running; k++) {
          const targets = cluster.members.filter((m) => m.alive || k % 7 === 0);
          const target = targets[(w + k) % targets.length]!;
          const name = `w${w}-${k}`;
          try {
            const res = await fetch(`${target.url}/v1/namespace/${name}`, {
              method: "PUT",
              body: "{}",
              signal: AbortSignal.timeout(30_000),
            });
            if (res.status === 200) {
              this.acked.push({ name, index: Number(res.headers.get("x-nomad-index")), via: target.name });
            } else this.failed++;
          } catch {
            this.failed++;
          }
        }
      }),
    ).then(() => undefined);
  }

  /** Resolves once at least `count` more writes have been acknowledged. */
  async more(count: number, timeoutMs = 60_000): Promise<void> {
    const target = this.acked.length + count;
    await eventually(() => expect(this.acked.length).toBeGreaterThanOrEqual(target), timeoutMs);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}
