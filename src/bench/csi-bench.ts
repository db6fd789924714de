import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import type { AllocRow } from "../../projections/allocs.ts";
import type { CSIPluginRow } from "../../projections/csi-plugins.ts";
import type { CSIVolumeRow } from "../../projections/csi-volumes.ts";
import { loadConfig } from "../config.ts";
import { NodeSimulator } from "../nodesim/simulator.ts";
import { startServer } from "../server.ts";
import { percentile } from "./percentile.ts";

export interface CSIBenchOptions {
  /** Volumes, and allocations of the one job claiming them (default 1,000). */
  readonly volumes?: number;
  /** Simulated nodes running plugin `ebs`'s node and controller plugins (default 100). */
  readonly nodes?: number;
  /** Volumes registered afterwards and never used, for the idle figures (default 1,000). */
  readonly idleVolumes?: number;
  readonly timeoutMs?: number;
}

export interface CSIBenchFigures {
  readonly volumes: number;
  readonly nodes: number;
  /** Job registered → every volume claimed by its allocation (placement, task start and CSIVolume.Claim). */
  readonly claim_s: number;
  readonly claims_per_s: number;
  /** Job stopped → every claim freed (alloc stop, CSIVolume.Unpublish, node and controller detach calls). */
  readonly release_s: number;
  readonly releases_per_s: number;
  /** One allocation's stop applied (DesiredStatus stop) → its volume's claim freed. */
  readonly stop_to_free_p50_ms: number;
  readonly stop_to_free_p99_ms: number;
  /** Releases timed that way (every one, unless an allocation's stop was not seen). */
  readonly timed_releases: number;
  readonly idle_volumes: number;
  /** RSS and heap growth per idle volume (after full collections when --expose-gc), the whole process. */
  readonly idle_rss_bytes_per_volume: number;
  readonly idle_heap_bytes_per_volume: number;
  /** Volume watcher passes while the idle volumes were registered and left alone: 0. */
  readonly idle_watcher_passes: number;
}

const ACCESS = { AccessMode: "single-node-writer", AttachmentMode: "file-system" } as const;

/** Nomad's per_alloc volume IDs: the group's volume source and the allocation's index. */
const volumeID = (i: number) => `vol[${i}]`;

function volume(id: string): Record<string, unknown> {
  return {
    ID: id,
    Name: id,
    ExternalID: `ext-${id}`,
    PluginID: "ebs",
    RequestedCapabilities: [ACCESS],
  };
}

function job(count: number): Record<string, unknown> {
  return {
    ID: "csi-bench",
    Type: "service",
    TaskGroups: [
      {
        Name: "g",
        Count: count,
        Volumes: { data: { Name: "data", Type: "csi", Source: "vol", PerAlloc: true, ...ACCESS } },
        Tasks: [
          {
            Name: "t",
            Driver: "mock_driver",
            Resources: { CPU: 20, MemoryMB: 16 },
            VolumeMounts: [{ Volume: "data", Destination: "/srv" }],
          },
        ],
      },
    ],
  };
}

/** The volume watcher's counters, read from the running service (structural: the service is looked up by name). */
interface WatcherCounters {
  readonly counters?: { readonly passes: number };
}

/**
 * Claims and their release at scale: one job of `volumes` allocations, each
 * writing its own single-node-writer volume (per_alloc), on simulated nodes
 * running the `ebs` plugin (their csi hook claims on start and unpublishes on
 * stop, and they answer the server's detach calls). Then idle volumes: what
 * each costs in memory, and that the watcher does nothing for them.
 */
export async function benchCSI(
  options: CSIBenchOptions = {},
  progress: (what: string) => void = () => undefined,
): Promise<CSIBenchFigures> {
  const count = options.volumes ?? 1_000;
  const nodes = options.nodes ?? 100;
  const idle = options.idleVolumes ?? 1_000;
  const timeoutMs = options.timeoutMs ?? 600_000;
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-csi-"));
  const config = await loadConfig(
    ["--http-addr", "127.0.0.1:0", "--data-dir", dir, "--log-level", "silent"],
    {},
  );
  const server = await startServer(config, { logger: pino({ level: "silent" }) });
  const url = `http://${server.address}`;
  const fast = { min: 1, max: 5 };
  const sim = new NodeSimulator({
    server: url,
    nodes,
    seed: "csi-bench",
    shape: { csiNodePlugins: ["ebs"], csiControllerPlugins: ["ebs"] },
    driver: { setup: fast, pull: fast, start: fast, kill: fast, failureRate: 0, eventInterval: 0 },
  });

  const claimedAt = new Map<string, number>();
  const freedAt = new Map<string, number>();
  const holder = new Map<string, string>();
  const stoppedAt = new Map<string, number>();
  const subscription = server.store.change$.subscribe((c) => {
    if (c.table === "csi_volumes") {
      const after = c.after as CSIVolumeRow | undefined;
      if (!after) return;
      const writer = Object.keys(after.WriteClaims)[0];
      if (writer !== undefined && !claimedAt.has(after.ID)) {
        claimedAt.set(after.ID, performance.now());
        holder.set(after.ID, writer);
      }
      const before = c.before as CSIVolumeRow | undefined;
      const held = (v: CSIVolumeRow) => Object.keys(v.WriteClaims).length + Object.keys(v.PastClaims).length;
      if (before && held(before) > 0 && held(after) === 0) freedAt.set(after.ID, performance.now());
    } else if (c.table === "allocs") {
      const a = c.after as AllocRow | undefined;
      const b = c.before as AllocRow | undefined;
      // The server's stop (the plan that stops it): the client's csi hook unpublishes before it reports the end.
      const stopped = (r: AllocRow | undefined) => r !== undefined && r.DesiredStatus === "stop";
      if (a && stopped(a) && !stopped(b)) stoppedAt.set(a.ID, performance.now());
    }
  });
  const send = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(url + path, {
      method,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  };
  const register = async (ids: readonly string[]) => {
    for (let i = 0; i < ids.length; i += 100)
      await send("PUT", "/v1/volumes", { Volumes: ids.slice(i, i + 100).map(volume) });
  };
  const until = async (what: string, check: () => boolean) => {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`csi bench: timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  try {
    await sim.start();
    const plugins = server.store.table<CSIPluginRow>("csi_plugins");
    await until("the nodes' plugins", () => (plugins.get("ebs")?.NodesHealthy ?? 0) >= nodes);
    progress(`${nodes} nodes with plugin ebs; registering ${count} volumes`);
    await register(Array.from({ length: count }, (_, i) => volumeID(i)));

    let t = performance.now();
    await send("PUT", "/v1/jobs", { Job: job(count) });
    await until("every volume claimed", () => claimedAt.size >= count);
    const claimS = (performance.now() - t) / 1000;
    progress(`${count} claims in ${claimS.toFixed(1)} s; stopping the job`);

    t = performance.now();
    await send("DELETE", "/v1/job/csi-bench");
    await until("every claim freed", () => freedAt.size >= count);
    const releaseS = (performance.now() - t) / 1000;
    const stopToFree: number[] = [];
    for (const [id, at] of freedAt) {
      const stopped = stoppedAt.get(holder.get(id) ?? "");
      if (stopped !== undefined) stopToFree.push(at - stopped);
    }
    progress(`${count} releases in ${releaseS.toFixed(1)} s; ${idle} idle volumes`);

    const watcher = server.services.find((s) => s.name === "volume-watcher") as WatcherCounters | undefined;
    const passes = () => watcher?.counters?.passes ?? Number.NaN;
    const memory = () => {
      globalThis.gc?.();
      return process.memoryUsage();
    };
    await new Promise((r) => setTimeout(r, 1_000));
    const passesBefore = passes();
    const m0 = memory();
    await register(Array.from({ length: idle }, (_, i) => `idle-${i}`));
    await until(
      "the idle volumes applied",
      () => server.store.table<CSIVolumeRow>("csi_volumes").size >= count + idle,
    );
    await new Promise((r) => setTimeout(r, 1_000));
    const m1 = memory();
    return {
      volumes: count,
      nodes,
      claim_s: round(claimS),
      claims_per_s: Math.round(count / claimS),
      release_s: round(releaseS),
      releases_per_s: Math.round(count / releaseS),
      stop_to_free_p50_ms: percentile(stopToFree, 0.5),
      stop_to_free_p99_ms: percentile(stopToFree, 0.99),
      timed_releases: stopToFree.length,
      idle_volumes: idle,
      idle_rss_bytes_per_volume: Math.round((m1.rss - m0.rss) / idle),
      idle_heap_bytes_per_volume: Math.round((m1.heapUsed - m0.heapUsed) / idle),
      idle_watcher_passes: passes() - passesBefore,
    };
  } finally {
    subscription.unsubscribe();
    await sim.stop();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const round = (n: number) => Math.round(n * 1000) / 1000;
