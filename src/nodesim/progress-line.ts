import type { SimReport } from "./simulator.ts";

/**
 * One line of what a running simulator did since the previous report: node
 * states, the clients' allocations, RPCs per second by method, heartbeat
 * latency, and the process's CPU share and RSS.
 */
export function progressLine(now: SimReport, prev: SimReport | undefined): string {
  const seconds = prev ? now.uptime_s - prev.uptime_s : now.uptime_s;
  const rate = (method: string) => {
    const calls = (now.rpc[method]?.calls ?? 0) - (prev?.rpc[method]?.calls ?? 0);
    return seconds > 0 ? Math.round(calls / seconds) : 0;
  };
  const cpu = now.process.cpu_user_s + now.process.cpu_system_s;
  const cpuBefore = prev ? prev.process.cpu_user_s + prev.process.cpu_system_s : 0;
  const cpuShare = seconds > 0 ? Math.round(((cpu - cpuBefore) / seconds) * 100) : 0;
  const errors = Object.values(now.rpc).reduce((n, m) => n + m.errors, 0);
  const methods = [
    "Node.UpdateStatus",
    "Node.UpdateAlloc",
    "Node.GetClientAllocs",
    "Alloc.GetAllocs",
    "Node.Register",
  ]
    .map((m) => `${m.split(".")[1]} ${rate(m)}`)
    .join(", ");
  return (
    `nodesim: ${now.nodes.up}/${now.nodes.total} up, ${now.nodes.silent} silent | ` +
    `allocs ${now.allocs.running} running, ${now.allocs.pending} pending, ${now.allocs.complete} complete, ${now.allocs.failed} failed | ` +
    `rpc/s ${methods} | errors ${errors} | heartbeat p50 ${now.heartbeat.p50_ms} ms p99 ${now.heartbeat.p99_ms} ms | ` +
    `cpu ${cpuShare}% rss ${Math.round(now.process.rss_bytes / 2 ** 20)} MiB`
  );
}
