import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Kafka, logLevel } from "kafkajs";
import { pino } from "pino";
import { filter, firstValueFrom } from "rxjs";
import { createProjections } from "../../projections/index.ts";
import { allSchemas } from "../../streams/index.ts";
import { EnvelopeCodec } from "../codec/envelope-codec.ts";
import { openKafkaLog } from "../log/kafka/index.ts";
import { Store } from "../store/store.ts";
import { percentile } from "./percentile.ts";
import { type ServerProcess, spawnServer } from "./server-process.ts";

// A type, not an interface: the bench command collects figures as Record<string, number>.
export type ClusterBenchResult = {
  /** PUT through the leader (HTTP) -> the change applied by a follower's store on the same topic. */
  readonly follower_visible_p50_ms: number;
  readonly follower_visible_p99_ms: number;
  /** Leader SIGKILLed -> the next leader's LeadershipEstablished applied on a follower. */
  readonly failover_median_ms: number;
  readonly failover_max_ms: number;
  /** Leader SIGTERMed (it leaves the election on its way out) -> the same. */
  readonly graceful_failover_ms: number;
  /** The election's session timeout the servers ran with: the floor of failover_* above. */
  readonly session_timeout_ms: number;
};

export interface ClusterBenchOptions {
  readonly servers?: number;
  readonly writes?: number;
  readonly killRounds?: number;
  /** Passed to the servers as --leader-session-timeout, in ms (default: theirs, 6000). */
  readonly sessionTimeoutMs?: number;
}

const quiet = pino({ level: "silent" });

/**
 * Runs `servers` chronomad processes on a fresh Kafka topic, plus a
 * follower store in this process that timestamps what it applies. Measures
 * how soon a write made through the leader is applied by a follower, then
 * kills the leader (SIGKILL, `killRounds` times, replacing it each time;
 * then once with SIGTERM) and measures how soon a new leader is established
 * in the log. The topics are deleted afterwards.
 */
export async function benchCluster(
  brokers: string,
  options: ClusterBenchOptions = {},
): Promise<ClusterBenchResult> {
  const servers = options.servers ?? 3;
  const writes = options.writes ?? 1000;
  const killRounds = options.killRounds ?? 3;
  const sessionTimeoutMs = options.sessionTimeoutMs ?? 6000;
  const topic = `chronomad-bench-cluster-${randomUUID()}`;
  const url = `kafka://${brokers}/${topic}`;
  const dataDirs: string[] = [];
  const running: ServerProcess[] = [];
  let started = 0;
  const startOne = async () => {
    const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-cluster-"));
    dataDirs.push(dir);
    const args = ["--log", url, "--data-dir", dir, "--leader-session-timeout", `${sessionTimeoutMs}ms`];
    const server = await spawnServer(`bench-${++started}`, args);
    running.push(server);
    return server;
  };

  const log = await openKafkaLog(url, { logger: quiet });
  const projections = createProjections();
  const follower = new Store({
    log,
    codec: new EnvelopeCodec(allSchemas),
    projections: projections.all,
    logger: quiet,
  });
  try {
    await Promise.all(Array.from({ length: servers }, startOne));
    await follower.start();
    let leader = await agreedLeader(running);

    // Warm-up: connections, JIT, the leader's producer.
    for (let i = 0; i < 50; i++) await put(leader, `warm-${i}`);
    const visible: number[] = [];
    for (let i = 0; i < writes; i++) {
      const name = `ns-${i}`;
      const seen = firstValueFrom(
        follower.change$.pipe(
          filter((c) => c.table === "namespaces" && c.key === name && c.after !== undefined),
        ),
      ).then(() => performance.now());
      const t0 = performance.now();
      await put(leader, name);
      visible.push((await seen) - t0);
    }

    const failovers: number[] = [];
    for (let round = 0; round <= killRounds; round++) {
      const graceful = round === killRounds;
      const epoch = projections.tables.leadership.size;
      const established = nextEpoch(follower, projections.tables.leadership, epoch);
      const t0 = performance.now();
      leader.child.kill(graceful ? "SIGTERM" : "SIGKILL");
      await leader.exited;
      failovers.push((await established) - t0);
      running.splice(running.indexOf(leader), 1);
      if (!graceful) await startOne();
      leader = await agreedLeader(running);
    }
    const killed = failovers.slice(0, killRounds);
    return {
      follower_visible_p50_ms: percentile(visible, 0.5),
      follower_visible_p99_ms: percentile(visible, 0.99),
      failover_median_ms: percentile(killed, 0.5),
      failover_max_ms: percentile(killed, 1),
      graceful_failover_ms: percentile(failovers.slice(killRounds), 1),
      session_timeout_ms: sessionTimeoutMs,
    };
  } finally {
    for (const s of running) s.child.kill("SIGTERM");
    await Promise.all(running.map((s) => s.exited));
    await follower.stop();
    await log.close();
    for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
    await deleteTopics(brokers, [topic, `${topic}.leader`]);
  }
}

async function put(server: ServerProcess, name: string): Promise<void> {
  const res = await fetch(`${server.url}/v1/namespace/${name}`, { method: "PUT", body: "{}" });
  if (res.status !== 200)
    throw new Error(`PUT ${name} via ${server.name}: ${res.status} ${await res.text()}`);
}

/** Resolves with the time the store applies the claim of epoch `after + 1`. */
function nextEpoch(store: Store, leadership: { size: number }, after: number): Promise<number> {
  return firstValueFrom(store.applied$.pipe(filter(() => leadership.size > after))).then(() =>
    performance.now(),
  );
}

/** Waits until every server names the same leader, one of them; returns it. */
async function agreedLeader(servers: readonly ServerProcess[]): Promise<ServerProcess> {
  for (;;) {
    const named = await Promise.all(
      servers.map(async (s) => {
        const res = await fetch(`${s.url}/v1/status/leader`).catch(() => undefined);
        return res?.ok ? ((await res.json()) as string) : "";
      }),
    );
    const leader = servers.find((s) => s.address === named[0]);
    if (leader && named.every((n) => n === named[0])) return leader;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function deleteTopics(brokers: string, topics: string[]): Promise<void> {
  const admin = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    await admin.deleteTopics({ topics });
  } catch {
    // A leftover bench topic costs disk, not correctness.
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

// `npx tsx src/bench/cluster-bench.ts [brokers]`: the figures alone, as JSON.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const brokers = process.argv[2] ?? process.env.KAFKA_BROKERS ?? "127.0.0.1:9092";
  process.stdout.write(`${JSON.stringify(await benchCluster(brokers))}\n`);
}
