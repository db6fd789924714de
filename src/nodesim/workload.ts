/**
 * The jobs a load run registers, in Nomad's job JSON (`PUT /v1/jobs` with
 * `{"Job": {...}}`, PascalCase, durations in nanoseconds): system, service
 * and batch jobs whose tasks use the `mock_driver` the simulated nodes
 * advertise. Deployments are off (Update.MaxParallel 0, as C2M ran).
 */

const SECOND = 1e9;
const MINUTE = 60 * SECOND;

export interface WorkloadMix {
  /** System jobs: one allocation per ready node each. */
  readonly systemJobs: number;
  readonly serviceJobs: number;
  readonly serviceCount: number;
  /** Share of service jobs whose group tolerates a client disconnect (max_client_disconnect). */
  readonly tolerantShare: number;
  readonly batchJobs: number;
  readonly batchCount: number;
  /** mock_driver `run_for` of batch tasks (Go duration). */
  readonly batchRunFor: string;
  /** max_client_disconnect of the tolerant groups, nanoseconds. */
  readonly maxClientDisconnectNs?: number;
}

export interface WorkloadJob {
  readonly id: string;
  readonly type: "system" | "service" | "batch";
  /** Desired allocations; system jobs: one per ready node (-1 here). */
  readonly count: number;
  readonly body: { readonly Job: Record<string, unknown> };
}

/** The jobs of `mix`, in a fixed order: system, then service, then batch. */
export function workloadJobs(mix: WorkloadMix): WorkloadJob[] {
  const out: WorkloadJob[] = [];
  for (let i = 0; i < mix.systemJobs; i++) out.push(job(`sys-${pad(i)}`, "system", -1, {}));
  const tolerant = Math.round(mix.serviceJobs * mix.tolerantShare);
  for (let i = 0; i < mix.serviceJobs; i++) {
    out.push(
      job(`svc-${pad(i)}`, "service", mix.serviceCount, {
        MaxClientDisconnect: i < tolerant ? (mix.maxClientDisconnectNs ?? 10 * MINUTE) : null,
      }),
    );
  }
  for (let i = 0; i < mix.batchJobs; i++) {
    out.push(job(`batch-${pad(i)}`, "batch", mix.batchCount, {}, { run_for: mix.batchRunFor }));
  }
  return out;
}

/** Total allocations the mix asks for on `nodes` ready nodes. */
export function workloadSize(jobs: readonly WorkloadJob[], nodes: number): number {
  return jobs.reduce((sum, j) => sum + (j.count < 0 ? nodes : j.count), 0);
}

function job(
  id: string,
  type: WorkloadJob["type"],
  count: number,
  group: Record<string, unknown>,
  config: Record<string, unknown> = {},
): WorkloadJob {
  return {
    id,
    type,
    count,
    body: {
      Job: {
        ID: id,
        Name: id,
        Namespace: "default",
        Type: type,
        Priority: 50,
        Datacenters: ["dc1"],
        // Nomad refuses an update block on batch jobs.
        ...(type === "service" && { Update: { MaxParallel: 0 } }),
        TaskGroups: [
          {
            Name: "g",
            Count: count < 0 ? 1 : count,
            EphemeralDisk: { SizeMB: 10 },
            RestartPolicy: {
              Attempts: 2,
              Interval: 30 * MINUTE,
              Delay: 15 * SECOND,
              Mode: "fail",
            },
            ...group,
            Tasks: [
              {
                Name: "app",
                Driver: "mock_driver",
                Config: config,
                Resources: { CPU: 100, MemoryMB: 64 },
                // Small enough for the 10 MB disk (Nomad: logs must fit in it with room to spare).
                LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
              },
            ],
          },
        ],
      },
    },
  };
}

const pad = (i: number) => String(i).padStart(3, "0");

/** Whether the server serves Nomad's jobs API (GET /v1/jobs answers something other than 404). */
export async function jobsApiServed(url: string): Promise<boolean> {
  const res = await fetch(`${url}/v1/jobs`);
  await res.arrayBuffer();
  return res.status !== 404 && res.status !== 405;
}

/** `PUT /v1/jobs` for each job, a few at a time; rejects with the server's message on a refusal. */
export async function registerJobs(
  url: string,
  jobs: readonly WorkloadJob[],
  concurrency = 4,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const j = jobs[next++]!;
      const res = await fetch(`${url}/v1/jobs`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(j.body),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`PUT /v1/jobs ${j.id}: ${res.status} ${text}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, jobs.length) }, worker));
}
