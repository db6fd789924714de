import type { LoadRunFigures } from "./load-run.ts";
import type { GcKindPauses, ServerRpcTiming } from "./load-server.ts";

export interface LoadComparison {
  /** (off − on) / off: the share prioritized updates saved. */
  readonly log_events_cut: number;
  readonly log_bytes_cut: number;
  readonly client_update_events_cut: number;
  readonly client_update_bytes_cut: number;
  readonly update_alloc_rpcs_cut: number;
  readonly rpcs_cut: number;
}

export interface LoadBenchReport {
  readonly started_at: string;
  readonly machine: { readonly cpus: number; readonly node: string; readonly platform: string };
  readonly settings: Record<string, unknown>;
  readonly runs: readonly LoadRunFigures[];
  readonly comparison: LoadComparison | null;
  readonly goals: readonly {
    readonly goal: string;
    readonly measured: string;
    readonly met: boolean | null;
  }[];
}

const cut = (on: number, off: number) => (off > 0 ? Math.round(((off - on) / off) * 1000) / 1000 : 0);
const totalCalls = (r: LoadRunFigures) => Object.values(r.rpc_calls).reduce((a, b) => a + b, 0);

/** What turning prioritized updates on saved, from a run with them on and one with them off. */
export function compare(on: LoadRunFigures, off: LoadRunFigures): LoadComparison {
  return {
    log_events_cut: cut(on.log.records, off.log.records),
    log_bytes_cut: cut(on.log.bytes, off.log.bytes),
    client_update_events_cut: cut(on.log.client_update_events, off.log.client_update_events),
    client_update_bytes_cut: cut(on.log.client_update_bytes, off.log.client_update_bytes),
    update_alloc_rpcs_cut: cut(on.rpc_calls["Node.UpdateAlloc"] ?? 0, off.rpc_calls["Node.UpdateAlloc"] ?? 0),
    rpcs_cut: cut(totalCalls(on), totalCalls(off)),
  };
}

/** What the goals read of a run. */
export type GoalFigures = Pick<
  LoadRunFigures,
  | "prioritized_updates"
  | "nodes"
  | "allocs_running"
  | "running_wait"
  | "server"
  | "burst"
  | "nodes_down_before_wave"
  | "replay"
>;

/** The acceptance goals of the load benchmark, against what was measured. */
export function goals(runs: readonly GoalFigures[], comparison: LoadComparison | null, totalSeconds: number) {
  const on = runs.find((r) => r.prioritized_updates) ?? runs[0];
  const out: { goal: string; measured: string; met: boolean | null }[] = [];
  out.push({
    goal: "completes in under 10 minutes",
    measured: `${Math.round(totalSeconds)} s`,
    met: totalSeconds < 600,
  });
  if (on) {
    // Judged by the burst's wait, which saw them all run at once; the count read after it may be
    // lower by the tasks the simulated driver failed since.
    const wait = on.running_wait;
    out.push({
      goal: "≥ 50,000 allocations placed and running across 5,000 nodes",
      measured:
        `${n(wait.peak)} of ${n(wait.target)} running at once on ${n(on.nodes)} nodes ` +
        `(${wait.held ? "all of them before the placement timeout" : "placement timeout reached"}); ` +
        `${n(on.allocs_running)} running after the burst`,
      met: wait.held && wait.peak >= 50_000 && on.nodes >= 5_000,
    });
    const rss = Math.max(...runs.map((r) => r.server.rss_peak));
    out.push({
      goal: "server RSS ≤ 2 GiB",
      measured: `${mib(rss)} MiB peak`,
      met: rss > 0 ? rss <= 2 * 2 ** 30 : null,
    });
    out.push({
      goal: "≥ 5,000 placements/s in the burst",
      measured: on.burst?.placements_per_s ? `${n(on.burst.placements_per_s)}/s` : "not measured",
      met: on.burst?.placements_per_s ? on.burst.placements_per_s >= 5_000 : null,
    });
    out.push({
      goal: "heartbeat p99 ≤ 50 ms during the burst",
      measured: on.burst
        ? `${on.burst.heartbeat.p99_ms} ms (server side ${on.burst.server_rpc["Node.UpdateStatus"]?.p99_ms ?? "—"} ms; simulator loop delay p99 ${on.burst.sim_loop.p99_ms} ms)`
        : "not measured",
      met: on.burst ? on.burst.heartbeat.p99_ms <= 50 : null,
    });
    out.push({
      goal: "main event-loop delay p99 ≤ 20 ms during the burst",
      measured: on.burst ? `${on.burst.loop.p99_ms} ms (max ${on.burst.loop.max_ms} ms)` : "not measured",
      met: on.burst ? on.burst.loop.p99_ms <= 20 : null,
    });
    const down = Math.max(...runs.map((r) => r.nodes_down_before_wave));
    out.push({
      goal: "no node declared down before the disconnect wave (heartbeat grace as set)",
      measured: `${n(down)} declared down`,
      met: down === 0,
    });
    const replays = runs.flatMap((r) => (r.replay ? [r.replay.seconds] : []));
    const replay = Math.max(...replays);
    out.push({
      goal: "replay of the produced log ≤ 30 s",
      measured: replays.length > 0 ? `${replay} s` : "not run",
      met: replays.length > 0 ? replay <= 30 : null,
    });
  }
  out.push({
    goal: "prioritized batching cuts log bytes from allocation updates by ≥ 20%",
    measured: comparison ? `${pct(comparison.client_update_bytes_cut)}` : "not run",
    met: comparison ? comparison.client_update_bytes_cut >= 0.2 : null,
  });
  return out;
}

const serverTime = (t: Omit<ServerRpcTiming, "sent_to_read"> | undefined) =>
  t ? `${t.p50_ms} / ${t.p99_ms} / ${t.max_ms}` : "—";
const gcPauses = (g: GcKindPauses | undefined) =>
  g ? `${n(g.count)} / ${n(Math.round(g.total_ms))} / ${n(Math.round(g.max_ms))}` : "—";
const mib = (b: number) => Math.round(b / 2 ** 20);
const pct = (f: number) => `${Math.round(f * 1000) / 10}%`;
const n = (v: number | null | undefined) => (v === null || v === undefined ? "—" : v.toLocaleString("en-US"));
const coreTime = (t: { readonly cpu_ms: number; readonly waiting_ms: number } | undefined) =>
  t ? `${(t.cpu_ms / 1000).toFixed(1)} / ${(t.waiting_ms / 1000).toFixed(1)}` : "—";

/** The report as a markdown page: settings, one column per run, the comparison and the goals. */
export function toMarkdown(report: LoadBenchReport): string {
  const runs = report.runs;
  const head = `| figure | ${runs.map((r) => `prioritized ${r.prioritized_updates ? "on" : "off"}`).join(" | ")} |`;
  const sep = `| --- | ${runs.map(() => "---:").join(" | ")} |`;
  const row = (label: string, f: (r: LoadRunFigures) => string) =>
    `| ${label} | ${runs.map(f).join(" | ")} |`;
  const methods = [...new Set(runs.flatMap((r) => Object.keys(r.rpc_per_s_steady)))].sort();
  const burstMethods = [...new Set(runs.flatMap((r) => Object.keys(r.burst?.server_rpc ?? {})))]
    .filter((m) => m !== "Node.UpdateStatus")
    .sort();
  const lines = [
    `# chronomad load benchmark`,
    "",
    `${report.started_at} · ${report.machine.cpus} CPUs · Node ${report.machine.node} · ${report.machine.platform}`,
    "",
    "```json",
    JSON.stringify(report.settings, null, 2),
    "```",
    "",
    head,
    sep,
    row("nodes", (r) => n(r.nodes)),
    row("heartbeats sent from", (r) =>
      r.heartbeat_thread ? "their own thread" : "the simulator's main thread",
    ),
    row("simulator main thread's nice value", (r) => n(r.sim_nice)),
    row(
      "allocations desired / placed / running after the burst",
      (r) => `${n(r.allocs_desired)} / ${n(r.allocs_placed)} / ${n(r.allocs_running)}`,
    ),
    row(
      "burst: most allocations running at once the wait saw / target",
      (r) =>
        `${n(r.running_wait.peak)} / ${n(r.running_wait.target)}${r.running_wait.held ? "" : " (timed out)"}`,
    ),
    row("registration (nodes/s)", (r) => n(r.registration_nodes_per_s)),
    row("placement rate (allocs/s, scheduler)", (r) => n(r.placement_per_s)),
    row("placement → all running (s)", (r) => n(r.seconds.place_to_running)),
    row("log records", (r) => n(r.log.records)),
    row("log bytes", (r) => n(r.log.bytes)),
    row("events/s into the log (whole run)", (r) => n(r.log.events_per_s)),
    row("events/s into the log (steady state)", (r) => n(r.log.steady_events_per_s)),
    row("log bytes/s (steady state)", (r) => n(r.log.steady_bytes_per_s)),
    row("allocation events / bytes", (r) => `${n(r.log.alloc_events)} / ${n(r.log.alloc_bytes)}`),
    row("allocation transitions", (r) => n(r.log.alloc_transitions)),
    row("log bytes per allocation transition", (r) => n(r.log.bytes_per_alloc_transition)),
    row(
      "AllocClientUpdated events / bytes",
      (r) => `${n(r.log.client_update_events)} / ${n(r.log.client_update_bytes)}`,
    ),
    row(
      "client update entries / status transitions",
      (r) => `${n(r.log.client_update_entries)} / ${n(r.log.client_transitions)}`,
    ),
    ...methods.map((m) => row(`${m} (calls/s, steady)`, (r) => n(r.rpc_per_s_steady[m] ?? 0))),
    row("Node.UpdateAlloc calls (whole run)", (r) => n(r.rpc_calls["Node.UpdateAlloc"] ?? 0)),
    row("client RPCs (whole run)", (r) => n(totalCalls(r))),
    row("client request bytes (whole run)", (r) => n(r.rpc_bytes_out)),
    row("heartbeat p50 / p99 (ms)", (r) => `${r.heartbeat_p50_ms} / ${r.heartbeat_p99_ms}`),
    row("burst: placements/s (first registration to last placement)", (r) => n(r.burst?.placements_per_s)),
    row("burst: heartbeat p50 / p99 / max (ms)", (r) =>
      r.burst
        ? `${r.burst.heartbeat.p50_ms} / ${r.burst.heartbeat.p99_ms} / ${r.burst.heartbeat.max_ms}`
        : "—",
    ),
    row("burst: Node.UpdateStatus server time p50 / p99 / max (ms)", (r) =>
      serverTime(r.burst?.server_rpc["Node.UpdateStatus"]),
    ),
    row("burst: Node.UpdateStatus sent → read by the server p50 / p99 / max (ms)", (r) =>
      serverTime(r.burst?.server_rpc["Node.UpdateStatus"]?.sent_to_read),
    ),
    row("burst: server event-loop delay p50 / p99 / max (ms)", (r) =>
      r.burst ? `${r.burst.loop.p50_ms} / ${r.burst.loop.p99_ms} / ${r.burst.loop.max_ms}` : "—",
    ),
    row("burst: server GC scavenges count / total / max (ms)", (r) => gcPauses(r.burst?.loop.gc?.scavenge)),
    row("burst: server GC mark-compacts count / total / max (ms)", (r) =>
      gcPauses(r.burst?.loop.gc?.mark_compact),
    ),
    row("burst: server main thread on a core / waiting for one (s)", (r) =>
      coreTime(r.burst?.loop.main_thread),
    ),
    row("burst: server's other threads on a core / waiting for one (s); the busiest on a core (s)", (r) => {
      const t = r.burst?.loop.other_threads;
      return t ? `${coreTime(t)}; ${t.busiest_cpu_ms.map((ms) => (ms / 1000).toFixed(1)).join(", ")}` : "—";
    }),
    row("burst: machine's cores busy (all processes)", (r) => {
      const busy = r.burst?.loop.machine_busy;
      return busy === undefined ? "—" : pct(busy);
    }),
    row("burst: simulator event-loop delay p50 / p99 / max (ms)", (r) =>
      r.burst ? `${r.burst.sim_loop.p50_ms} / ${r.burst.sim_loop.p99_ms} / ${r.burst.sim_loop.max_ms}` : "—",
    ),
    row("burst: simulator heartbeat thread event-loop delay p50 / p99 / max (ms)", (r) => {
      const l = r.burst?.sim_heartbeat_loop;
      return l ? `${l.p50_ms} / ${l.p99_ms} / ${l.max_ms}` : "—";
    }),
    row("burst: simulator CPU (s)", (r) => n(r.burst?.sim_cpu_s)),
    ...burstMethods.map((m) =>
      row(`burst: ${m} server time p50 / p99 / max (ms), calls`, (r) => {
        const t = r.burst?.server_rpc[m];
        return t ? `${serverTime(t)}, ${n(t.count)}` : "—";
      }),
    ),
    row("nodes declared down before the wave", (r) => n(r.nodes_down_before_wave)),
    row("disconnect wave: nodes", (r) => n(r.wave.nodes)),
    row("converged after the wave (s)", (r) => n(r.wave.converge_s)),
    row("server RSS peak / end (MiB)", (r) => `${mib(r.server.rss_peak)} / ${mib(r.server.rss_end)}`),
    row("server heap peak / end (MiB)", (r) => `${mib(r.server.heap_peak)} / ${mib(r.server.heap_end)}`),
    row("server CPU (s)", (r) => n(r.server.cpu_s)),
    row(
      "simulator CPU (s) / RSS peak (MiB)",
      (r) => `${n(Math.round(r.sim.cpu_s))} / ${mib(r.sim.rss_peak)}`,
    ),
    row("replay of the log (s)", (r) => n(r.replay?.seconds)),
    row("replay (records/s)", (r) => n(r.replay?.records_per_s)),
    row("run time (s)", (r) => n(r.seconds.total)),
    "",
  ];
  if (report.comparison) {
    const c = report.comparison;
    lines.push(
      "## Prioritized updates on vs off (share saved)",
      "",
      "| | saved |",
      "| --- | ---: |",
      `| log records | ${pct(c.log_events_cut)} |`,
      `| log bytes | ${pct(c.log_bytes_cut)} |`,
      `| AllocClientUpdated records | ${pct(c.client_update_events_cut)} |`,
      `| AllocClientUpdated bytes | ${pct(c.client_update_bytes_cut)} |`,
      `| Node.UpdateAlloc calls | ${pct(c.update_alloc_rpcs_cut)} |`,
      `| all client RPCs | ${pct(c.rpcs_cut)} |`,
      "",
    );
  }
  lines.push("## Goals", "", "| goal | measured | met |", "| --- | --- | --- |");
  for (const g of report.goals)
    lines.push(`| ${g.goal} | ${g.measured} | ${g.met === null ? "—" : g.met ? "yes" : "no"} |`);
  const notes = [...new Set(runs.flatMap((r) => r.notes))];
  if (notes.length) lines.push("", "## Notes", "", ...notes.map((x) => `- ${x}`));
  return `${lines.join("\n")}\n`;
}
