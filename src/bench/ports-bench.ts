import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunningServer } from "../server.ts";
import { type Draft, writeEvents } from "../store/writer.ts";
import { readyNodeDrafts } from "./bench-nodes.ts";
import { startBenchServer } from "./bench-server.ts";
import { c2mJob } from "./c2m-job.ts";
import { idle, placed, putJob } from "./scheduler-bench.ts";

export interface PortsFigures {
  readonly nodes: number;
  readonly allocs: number;
  /** The same job without a network: the baseline. */
  readonly count_only_seconds: number;
  readonly count_only_placements_per_s: number;
  /** Each allocation asks for two dynamic ports of its group network. */
  readonly dynamic_ports_seconds: number;
  readonly dynamic_ports_placements_per_s: number;
  /** One allocation per node at most: a static port and a dynamic one. */
  readonly static_port_allocs: number;
  readonly static_port_seconds: number;
  readonly static_port_placements_per_s: number;
}

export interface PortsBenchOptions {
  readonly nodes?: number;
  readonly allocs?: number;
}

/**
 * Placements committed per second for one large job asking for ports, next
 * to the same job asking for none, on `nodes` ready nodes that fingerprint
 * a host network (file log, HTTP, the scheduler's defaults).
 */
export async function benchPorts(options: PortsBenchOptions = {}): Promise<PortsFigures> {
  const nodes = options.nodes ?? 5_000;
  const allocs = options.allocs ?? 10_000;
  const staticAllocs = Math.floor(nodes / 2);
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-ports-"));
  const server = await startBenchServer(["--data-dir", dir, "--fsync", "never"]);
  const url = `http://${server.address}`;
  try {
    await networkedNodes(server, nodes);
    const timed = async (id: string, count: number, job: Record<string, unknown>) => {
      const t0 = performance.now();
      await putJob(url, { Job: job });
      await placed(server, id, count);
      const seconds = (performance.now() - t0) / 1000;
      await idle(server);
      return seconds;
    };
    const plain = await timed("plain", allocs, c2mJob("plain", allocs));
    const dynamic = await timed(
      "dynamic",
      allocs,
      withNetwork(c2mJob("dynamic", allocs), {}, ["http", "metrics"]),
    );
    const fixed = await timed(
      "static",
      staticAllocs,
      withNetwork(c2mJob("static", staticAllocs), { http: 8080 }, ["metrics"]),
    );
    return {
      nodes,
      allocs,
      count_only_seconds: round(plain),
      count_only_placements_per_s: Math.round(allocs / plain),
      dynamic_ports_seconds: round(dynamic),
      dynamic_ports_placements_per_s: Math.round(allocs / dynamic),
      static_port_allocs: staticAllocs,
      static_port_seconds: round(fixed),
      static_port_placements_per_s: Math.round(staticAllocs / fixed),
    };
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const round = (n: number) => Math.round(n * 1000) / 1000;

function withNetwork(
  job: Record<string, unknown>,
  reserved: Record<string, number>,
  dynamic: readonly string[],
): Record<string, unknown> {
  const [group] = job.TaskGroups as Record<string, unknown>[];
  return {
    ...job,
    TaskGroups: [
      {
        ...group,
        Networks: [
          {
            ReservedPorts: Object.entries(reserved).map(([Label, Value]) => ({ Label, Value })),
            DynamicPorts: dynamic.map((Label) => ({ Label, To: -1 })),
          },
        ],
      },
    ],
  };
}

async function networkedNodes(server: RunningServer, count: number): Promise<void> {
  const actor = { kind: "server", id: "bench" } as const;
  for (let start = 0; start < count; start += 500) {
    const drafts: Draft[] = [];
    for (let i = start; i < Math.min(count, start + 500); i++)
      drafts.push(...readyNodeDrafts(i, true).drafts);
    await writeEvents(server.store, Date.now(), actor, drafts);
  }
}
