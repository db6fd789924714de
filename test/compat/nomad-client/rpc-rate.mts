/**
 * RPC calls per second from one idle Nomad 1.6.1 client agent running one
 * service job, at steady state: against chronomad, then against a real
 * Nomad 1.6.1 server, both with their default heartbeat settings.
 *
 *   npx tsx test/compat/nomad-client/rpc-rate.mts [--window 30] [--settle 15] [--only chronomad|nomad]
 *
 * Each figure is the growth of the server's request counter between two
 * samples `window` seconds apart, divided by the window, first for the
 * server alone, then with the client (chronomad:
 * nomad_rpc_request and chronomad_rpc_calls by method; Nomad:
 * nomad_nomad_rpc_request, its Prometheus name). A Nomad server counts a
 * call when it answers it, so blocking queries still waiting at the second
 * sample are not in either figure.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startTestServer } from "../../server-harness.ts";
import {
  hasNomad,
  NOMAD_BIN,
  startClientAgent,
  startServerAgent,
  stopAllAgents,
  waitFor,
} from "./client-agent.ts";
import { Api, alive, pidFiles, pidWriter, serviceJob } from "./fixtures.ts";

const { values } = parseArgs({
  options: {
    window: { type: "string", default: "30" },
    settle: { type: "string", default: "15" },
    only: { type: "string" },
  },
});
const windowMs = Number(values.window) * 1000;
const settleMs = Number(values.settle) * 1000;

if (!hasNomad) {
  console.error(`no nomad binary at ${NOMAD_BIN} (set NOMAD_BIN)`);
  process.exit(2);
}

type Counters = Map<string, number>;

/** Prometheus text -> "name{labels}" -> value, for the series `keep` accepts. */
function parseProm(text: string, keep: (name: string) => boolean): Counters {
  const out: Counters = new Map();
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || !line.trim()) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m && keep(m[1]!)) out.set(m[1]! + (m[2] ?? ""), Number(m[3]));
  }
  return out;
}

async function sample(url: string, keep: (name: string) => boolean): Promise<Counters> {
  const res = await fetch(`${url}/v1/metrics?format=prometheus`);
  if (!res.ok) throw new Error(`${url}/v1/metrics?format=prometheus: ${res.status} ${await res.text()}`);
  return parseProm(await res.text(), keep);
}

function rates(before: Counters, after: Counters): [string, number][] {
  return [...after]
    .map(([k, v]): [string, number] => [k, (v - (before.get(k) ?? 0)) / (windowMs / 1000)])
    .filter(([, r]) => r > 0)
    .sort((a, b) => b[1] - a[1]);
}

interface Measured {
  /** The server alone, before the client starts: what it calls on itself (a Nomad server's autopilot does). */
  readonly baseline: [string, number][];
  readonly withClient: [string, number][];
}

/** Samples twice `window` apart. */
async function windowRates(serverUrl: string, keep: (name: string) => boolean): Promise<[string, number][]> {
  const before = await sample(serverUrl, keep);
  await new Promise((r) => setTimeout(r, windowMs));
  return rates(before, await sample(serverUrl, keep));
}

/**
 * Samples the server alone over one window, then starts a client on
 * `servers`, runs one sleeper on it, waits `settle`, and samples again.
 */
async function measure(
  label: string,
  serverUrl: string,
  servers: string[],
  keep: (name: string) => boolean,
): Promise<Measured> {
  const api = new Api(serverUrl);
  console.error(`${label}: sampling the server alone over ${windowMs / 1000} s`);
  const baseline = await windowRates(serverUrl, keep);
  const work = await mkdtemp(join(tmpdir(), `nomad-rpc-rate-${label}-`));
  try {
    const dir = join(work, "pids");
    await mkdir(dir);
    const agent = await startClientAgent({ servers, name: `rate-${label}`, serverUrl });
    await waitFor(
      async () => {
        const id = await agent.nodeID();
        return id && (await api.node(id))?.Status === "ready";
      },
      { what: `${label}: node ready`, timeoutMs: 90_000 },
    );
    await api.register(serviceJob("idle", 1, { script: pidWriter(dir) }));
    await waitFor(
      async () => {
        const [a] = await api.allocs("idle");
        return a?.ClientStatus === "running" && [...pidFiles(dir).values()].some(alive);
      },
      { what: `${label}: the job running`, timeoutMs: 90_000 },
    );
    console.error(
      `${label}: job running; settling ${settleMs / 1000} s, then sampling ${windowMs / 1000} s apart`,
    );
    await new Promise((r) => setTimeout(r, settleMs));
    const withClient = await windowRates(serverUrl, keep);
    await api.stopJob("idle");
    await waitFor(() => [...pidFiles(dir).values()].every((p) => !alive(p)), {
      what: `${label}: the job stopped`,
      timeoutMs: 60_000,
    });
    await agent.destroy();
    return { baseline, withClient };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

const print = (label: string, counter: string, m: Measured) => {
  const show = (title: string, r: [string, number][]) => {
    console.log(`  ${title}`);
    if (r.length === 0) console.log("    (no calls in the window)");
    for (const [k, v] of r) console.log(`    ${v.toFixed(3).padStart(8)}  ${k}`);
  };
  console.log(`\n${label}: counter growth per second over ${windowMs / 1000} s`);
  show("the server alone:", m.baseline);
  show("with one idle client running one job:", m.withClient);
  const of = (r: [string, number][]) => r.find(([k]) => k === counter)?.[1] ?? 0;
  console.log(
    `  => ${counter}, the client's share: ${(of(m.withClient) - of(m.baseline)).toFixed(3)} calls/s`,
  );
};

try {
  if (values.only !== "nomad") {
    const s = await startTestServer();
    try {
      const r = await measure("chronomad", s.url, [s.rpcAddress], (n) =>
        /^(nomad_rpc_request|nomad_rpc_request_error|chronomad_rpc_calls|chronomad_rpc_unknown_method|nomad_streaming_rpc_.*)$/.test(
          n,
        ),
      );
      print("chronomad", "nomad_rpc_request", r);
    } finally {
      await s.stop();
    }
  }
  if (values.only !== "chronomad") {
    const nomad = await startServerAgent(
      "rate-nomad-server",
      'telemetry {\n  prometheus_metrics = true\n  disable_hostname = true\n  collection_interval = "1s"\n}\n',
    );
    await waitFor(
      async () => {
        const res = await fetch(`${nomad.url}/v1/status/leader`);
        return res.ok && (await res.json()) !== "";
      },
      { what: "the Nomad server to elect itself", timeoutMs: 60_000 },
    );
    const r = await measure("nomad", nomad.url, [nomad.rpcAddr], (n) => /^nomad_nomad_rpc_/.test(n));
    print("Nomad 1.6.1 server", "nomad_nomad_rpc_request", r);
  }
} finally {
  await stopAllAgents();
}
