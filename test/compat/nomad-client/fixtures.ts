import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** What these tests read of an allocation (GET /v1/allocation/:id and the job's allocation list). */
export interface AllocView {
  readonly ID: string;
  readonly Name: string;
  readonly NodeID: string;
  readonly JobID: string;
  readonly ClientStatus: string;
  readonly ClientDescription?: string;
  readonly DesiredStatus: string;
  readonly DesiredDescription?: string;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
  readonly PreviousAllocation?: string;
  readonly JobVersion?: number;
  readonly TaskStates?: Record<
    string,
    { State: string; Failed: boolean; StartedAt?: string | null; Events?: { Type: string }[] | null }
  > | null;
  readonly AllocStates?: { Field: string; Value: string; Time: string }[] | null;
}

export interface NodeView {
  readonly ID: string;
  readonly Name: string;
  readonly Status: string;
  readonly NodeClass: string;
  readonly HTTPAddr: string;
  readonly Drivers: Record<string, { Detected: boolean; Healthy: boolean; HealthDescription?: string }>;
  readonly Attributes: Record<string, string>;
  readonly Meta?: Record<string, string>;
}

export interface HistoryEntryView {
  readonly Index: number;
  readonly Field: string;
  readonly From: unknown;
  readonly To: unknown;
  readonly Cause: Record<string, unknown>;
}

/** The HTTP side of a chronomad (or Nomad) server, by base URL. */
export class Api {
  constructor(public url: string) {}

  async get<T>(path: string): Promise<T> {
    const res = await fetch(this.url + path);
    if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }

  /** GET that answers undefined on 404 (not there yet). */
  async find<T>(path: string): Promise<T | undefined> {
    const res = await fetch(this.url + path);
    if (res.status === 404) return undefined;
    if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }

  async send<T>(method: "PUT" | "POST" | "DELETE", path: string, body?: unknown): Promise<T> {
    const res = await fetch(this.url + path, {
      method,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** PUT /v1/jobs; resolves with the evaluation the registration created. */
  register(job: Record<string, unknown>): Promise<{ EvalID: string; JobModifyIndex: number }> {
    return this.send("PUT", "/v1/jobs", { Job: job });
  }

  /** PUT /v1/job/:id: a new version of a registered job. */
  update(job: Record<string, unknown>): Promise<{ EvalID: string; JobModifyIndex: number }> {
    return this.send("PUT", `/v1/job/${encodeURIComponent(String(job.ID))}`, { Job: job });
  }

  stopJob(id: string): Promise<{ EvalID: string }> {
    return this.send("DELETE", `/v1/job/${encodeURIComponent(id)}`);
  }

  allocs(jobID: string): Promise<AllocView[]> {
    return this.get(`/v1/job/${encodeURIComponent(jobID)}/allocations`);
  }

  alloc(id: string): Promise<AllocView> {
    return this.get(`/v1/allocation/${id}`);
  }

  node(id: string): Promise<NodeView | undefined> {
    return this.find(`/v1/node/${id}`);
  }

  history(kind: "allocation" | "node" | "job", id: string): Promise<HistoryEntryView[]> {
    return this.get(`/v1/${kind}/${id}/history`);
  }
}

/** A one-line summary of allocations for failure messages. */
export function describeAllocs(allocs: readonly AllocView[]): string {
  return allocs
    .map(
      (a) =>
        `${a.ID.slice(0, 8)} ${a.Name} node ${a.NodeID.slice(0, 8)} client ${a.ClientStatus} desired ${a.DesiredStatus}` +
        ` tasks [${Object.entries(a.TaskStates ?? {})
          .map(([t, s]) => `${t}:${s.State}${s.Failed ? "(failed)" : ""}`)
          .join(",")}] states [${(a.AllocStates ?? []).map((s) => s.Value).join(",")}]`,
    )
    .join("\n");
}

const SECOND_NS = 1_000_000_000;

interface TaskSpec {
  readonly name?: string;
  /** A /bin/sh script; Nomad interpolates ${NOMAD_*} in it before the shell sees it. */
  readonly script: string;
  readonly env?: Record<string, string>;
}

function rawExecTask(t: TaskSpec) {
  return {
    Name: t.name ?? "main",
    Driver: "raw_exec",
    Config: { command: "/bin/sh", args: ["-c", t.script] },
    Env: t.env ?? {},
    Resources: { CPU: 50, MemoryMB: 32 },
    // Long runners are `sleep`: SIGINT ends them at once, and a stop need not wait.
    KillTimeout: 2 * SECOND_NS,
  };
}

/** A batch job of one raw_exec task: no restarts or reschedules, so a failure shows as one. */
export function batchJob(id: string, task: TaskSpec, extra: Record<string, unknown> = {}) {
  return {
    ID: id,
    Name: id,
    Type: "batch",
    Datacenters: ["dc1"],
    TaskGroups: [
      {
        Name: "g",
        Count: 1,
        RestartPolicy: { Attempts: 0, Interval: 60 * SECOND_NS, Delay: SECOND_NS, Mode: "fail" },
        ReschedulePolicy: { Attempts: 0, Interval: 0, Unlimited: false },
        Tasks: [rawExecTask(task)],
      },
    ],
    ...extra,
  };
}

/**
 * A service job of `count` raw_exec tasks. `update` is the job's update
 * block (no deployment at all by default); `group` adds group fields
 * (e.g. MaxClientDisconnect).
 */
export function serviceJob(
  id: string,
  count: number,
  task: TaskSpec,
  options: {
    update?: Record<string, unknown>;
    group?: Record<string, unknown>;
    extra?: Record<string, unknown>;
  } = {},
) {
  return {
    ID: id,
    Name: id,
    Type: "service",
    Datacenters: ["dc1"],
    Update: options.update ?? { MaxParallel: 0 },
    TaskGroups: [
      {
        Name: "g",
        Count: count,
        RestartPolicy: { Attempts: 0, Interval: 60 * SECOND_NS, Delay: SECOND_NS, Mode: "fail" },
        Tasks: [rawExecTask(task)],
        ...options.group,
      },
    ],
    ...options.extra,
  };
}

/** A long runner that writes its pid to `<dir>/<alloc ID>.pid` (exec keeps the pid). */
export function pidWriter(dir: string): string {
  return `echo $$ > ${dir}/\${NOMAD_ALLOC_ID}.pid.tmp && mv ${dir}/\${NOMAD_ALLOC_ID}.pid.tmp ${dir}/\${NOMAD_ALLOC_ID}.pid; exec sleep 3600`;
}

/** The pid files in `dir`: allocation ID -> pid. */
export function pidFiles(dir: string): Map<string, number> {
  const pids = new Map<string, number>();
  if (!existsSync(dir)) return pids;
  for (const f of readdirSync(dir)) {
    if (!f.endsWith(".pid")) continue;
    const pid = Number(readFileSync(join(dir, f), "utf8").trim());
    if (Number.isInteger(pid) && pid > 0) pids.set(f.slice(0, -".pid".length), pid);
  }
  return pids;
}

/** Whether a process with this pid exists and is not a zombie. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // "pid (comm) S ...": Z is a zombie, dead in all but name.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true;
  }
}
