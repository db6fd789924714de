import type { NetworkPort, NetworkResource } from "../../streams/allocs.ts";
import type {
  Constraint,
  EphemeralDisk,
  JobReschedulePolicy,
  JobSpec,
  JobType,
  MigrateStrategy,
  RestartPolicy,
  TaskGroupSpec,
  TaskResources,
  TaskSpec,
  UpdateStrategy,
  VolumeMount,
  VolumeRequest,
} from "../../streams/jobs.ts";
import { mapped } from "../util/mapped.ts";
import { withCanonicalScaling } from "./scaling-policy.ts";
import { SERVER_FIELDS } from "./spec-changed.ts";

/**
 * Nomad's job defaults: the api package's Canonicalize (what `nomad job run`
 * sends) followed by the server's (structs.Job.Canonicalize and the
 * admission hooks), applied to a job as JSON. Fields of Nomad 1.5's job the
 * control plane does not read are carried as sent; fields Nomad 1.5 does not
 * know (a newer client's UI, task Actions, ...) are dropped, as Nomad's
 * decoder drops them; a known field of the wrong type is an error naming it.
 * One field of Nomad 1.6 is known: the job's NodePool (node pools are served).
 */

const SECOND = 1e9;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

export const JOB_DEFAULT_PRIORITY = 50;

/** Nomad's DefaultUpdateStrategy. */
export const DEFAULT_UPDATE_STRATEGY: UpdateStrategy = {
  Stagger: 30 * SECOND,
  MaxParallel: 1,
  HealthCheck: "checks",
  MinHealthyTime: 10 * SECOND,
  HealthyDeadline: 5 * MINUTE,
  ProgressDeadline: 10 * MINUTE,
  AutoRevert: false,
  AutoPromote: false,
  Canary: 0,
};

/** Nomad's DefaultMigrateStrategy. */
export const DEFAULT_MIGRATE_STRATEGY: MigrateStrategy = {
  MaxParallel: 1,
  HealthCheck: "checks",
  MinHealthyTime: 10 * SECOND,
  HealthyDeadline: 5 * MINUTE,
};

/** Nomad's default restart policies: service and system jobs, then batch and sysbatch. */
const SERVICE_RESTART: RestartPolicy = {
  Attempts: 2,
  Interval: 30 * MINUTE,
  Delay: 15 * SECOND,
  Mode: "fail",
};
const BATCH_RESTART: RestartPolicy = { Attempts: 3, Interval: 24 * HOUR, Delay: 15 * SECOND, Mode: "fail" };

/** Nomad's NewDefaultReschedulePolicy, per job type (system jobs get none). */
export function defaultReschedulePolicy(type: JobType): JobReschedulePolicy | null {
  switch (type) {
    case "service":
      return {
        Attempts: 0,
        Interval: 0,
        Delay: 30 * SECOND,
        DelayFunction: "exponential",
        MaxDelay: HOUR,
        Unlimited: true,
      };
    case "batch":
      return {
        Attempts: 1,
        Interval: 24 * HOUR,
        Delay: 5 * SECOND,
        DelayFunction: "constant",
        MaxDelay: 0,
        Unlimited: false,
      };
    case "system":
      return null;
    default:
      return { Attempts: 0, Interval: 0, Delay: 0, DelayFunction: "", MaxDelay: 0, Unlimited: false };
  }
}

const DEFAULT_EPHEMERAL_DISK: EphemeralDisk = { Sticky: false, SizeMB: 300, Migrate: false };

type Json = Record<string, unknown>;

/**
 * The fields of Nomad 1.5's Job, TaskGroup, Task, Resources, Consul and
 * WorkloadIdentity (the api structs its HTTP agent decodes a job into);
 * anything else is dropped. One exception: a group's `Disconnect` (Nomad
 * 1.8's form of max_client_disconnect) is kept, since its LostAfter is
 * honoured (streams/allocs.ts maxClientDisconnectMs).
 */
const JOB_FIELDS: FieldKinds = {
  Region: "string",
  Namespace: "string",
  ID: "string",
  Name: "string",
  Type: "string",
  Priority: "int",
  AllAtOnce: "bool",
  Datacenters: "array",
  NodePool: "string",
  Constraints: "array",
  Affinities: "array",
  TaskGroups: "array",
  Update: "object",
  Multiregion: "object",
  Spreads: "array",
  Periodic: "object",
  ParameterizedJob: "object",
  Reschedule: "object",
  Migrate: "object",
  Meta: "stringMap",
  ConsulToken: "string",
  VaultToken: "string",
  Stop: "bool",
  ParentID: "string",
  Dispatched: "bool",
  DispatchIdempotencyToken: "string",
  Payload: "string",
  ConsulNamespace: "string",
  VaultNamespace: "string",
  NomadTokenID: "string",
  Status: "string",
  StatusDescription: "string",
  Stable: "bool",
  Version: "int",
  SubmitTime: "int",
  CreateIndex: "int",
  ModifyIndex: "int",
  JobModifyIndex: "int",
};
const GROUP_FIELDS: FieldKinds = {
  Name: "string",
  Count: "int",
  Constraints: "array",
  Affinities: "array",
  Tasks: "array",
  Spreads: "array",
  Volumes: "object",
  RestartPolicy: "object",
  ReschedulePolicy: "object",
  EphemeralDisk: "object",
  Update: "object",
  Migrate: "object",
  Networks: "array",
  Meta: "stringMap",
  Services: "array",
  ShutdownDelay: "int",
  StopAfterClientDisconnect: "int",
  MaxClientDisconnect: "int",
  Scaling: "object",
  Consul: "object",
  Disconnect: "object",
};
const TASK_FIELDS: FieldKinds = {
  Name: "string",
  Driver: "string",
  User: "string",
  Lifecycle: "object",
  Config: "object",
  Constraints: "array",
  Affinities: "array",
  Env: "stringMap",
  Services: "array",
  Resources: "object",
  RestartPolicy: "object",
  Meta: "stringMap",
  KillTimeout: "int",
  LogConfig: "object",
  Artifacts: "array",
  Vault: "object",
  Templates: "array",
  DispatchPayload: "object",
  VolumeMounts: "array",
  CSIPluginConfig: "object",
  Leader: "bool",
  ShutdownDelay: "int",
  KillSignal: "string",
  Kind: "string",
  ScalingPolicies: "array",
  Identity: "object",
};
const RESOURCE_FIELDS: FieldKinds = {
  CPU: "int",
  Cores: "int",
  MemoryMB: "int",
  MemoryMaxMB: "int",
  DiskMB: "int",
  IOPS: "int",
  Networks: "array",
  Devices: "array",
};
const CONSUL_FIELDS: FieldKinds = {
  Namespace: "string",
};
const IDENTITY_FIELDS: FieldKinds = {
  Env: "bool",
  File: "bool",
};

/**
 * The JSON kind of each field, checked even where canonicalization does not
 * read the field, so that a job of the wrong shape is a 400 rather than
 * written to the log as sent.
 */
type FieldKind = "string" | "int" | "bool" | "object" | "array" | "stringMap";
type FieldKinds = Readonly<Record<string, FieldKind>>;

/** A job body that is not shaped like a job: a 400 naming the field. */
export class JobShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JobShapeError";
  }
}

/**
 * Reads typed fields out of JSON, collecting the type errors with the path of
 * each. A field's path is passed as its parent's path and its name, joined
 * only for an error: a registration reads a hundred fields, and building
 * each one's path up front was a string per field on every request.
 */
class Reader {
  readonly errors: string[] = [];
  /** Fields set (not null) that Nomad 1.5 does not know, by path: dropped. */
  readonly ignored: string[] = [];

  /**
   * A new object with the fields of `o` that are in `fields`, in their
   * order, each checked for its kind; those in `dropped` are checked but
   * left out. Callers add their defaults to it by assignment, which keeps
   * the key order an object spread would give (a key already there stays in
   * place, a new one goes last) without V8's slow path for a literal that
   * adds keys after a spread.
   */
  known(o: Json, fields: FieldKinds, path: string, dropped?: ReadonlySet<string>): Json {
    const out: Json = {};
    for (const k of Object.keys(o)) {
      const v = o[k];
      const kind = Object.hasOwn(fields, k) ? fields[k] : undefined;
      if (kind !== undefined) {
        this.check(kind, v, path, k);
        if (dropped === undefined || !dropped.has(k)) out[k] = v;
      } else if (v !== null && v !== undefined) this.ignored.push(`${path}.${k}`);
    }
    return out;
  }

  private check(kind: FieldKind, v: unknown, path: string, field: string): void {
    switch (kind) {
      case "string":
        this.string(v, path, field);
        break;
      // Go's int64 fields (SubmitTime in ns) exceed 2^53: their kind is any number here.
      case "int":
        this.number(v, path, field);
        break;
      case "bool":
        this.bool(v, path, field);
        break;
      case "object":
        this.object(v, path, field);
        break;
      case "array":
        this.array(v, path, field);
        break;
      case "stringMap":
        this.stringMap(v, path, field);
        break;
    }
  }

  object(v: unknown, path: string, field?: string): Json | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "object" || Array.isArray(v)) return this.fail(path, field, "an object", v);
    return v as Json;
  }
  array(v: unknown, path: string, field?: string): unknown[] | undefined {
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) return this.fail(path, field, "an array", v);
    return v;
  }
  string(v: unknown, path: string, field?: string): string | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") return this.fail(path, field, "a string", v);
    return v;
  }
  int(v: unknown, path: string, field?: string): number | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isSafeInteger(v)) return this.fail(path, field, "an integer", v);
    return v;
  }
  number(v: unknown, path: string, field?: string): number | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isFinite(v)) return this.fail(path, field, "a number", v);
    return v;
  }
  bool(v: unknown, path: string, field?: string): boolean | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "boolean") return this.fail(path, field, "a boolean", v);
    return v;
  }
  stringMap(v: unknown, path: string, field?: string): Record<string, string> | undefined {
    const o = this.object(v, path, field);
    if (!o) return undefined;
    for (const k of Object.keys(o)) {
      if (typeof o[k] !== "string" && o[k] !== undefined && o[k] !== null)
        this.string(o[k], joinPath(path, field), k);
    }
    return o as Record<string, string>;
  }

  private fail(path: string, field: string | undefined, expected: string, v: unknown): undefined {
    const got = Array.isArray(v) ? "an array" : v === null ? "null" : typeof v;
    // Only the first error is reported (Nomad's decoder stops at its first too).
    if (this.errors.length === 0)
      this.errors.push(`${joinPath(path, field)} must be ${expected}, not ${got}`);
    return undefined;
  }
}

function joinPath(path: string, field: string | undefined): string {
  return field === undefined ? path : `${path}.${field}`;
}

/**
 * The job with every default Nomad fills in, or a JobShapeError. `Priority`
 * 0 becomes the default; Datacenters empty becomes `["*"]`. The paths of the
 * fields dropped as unknown are added to `ignored`, when given.
 */
export function canonicalizeJob(input: unknown, ignored?: string[]): JobSpec {
  const r = new Reader();
  const job = r.object(input, "Job");
  if (!job) throw new JobShapeError("Job must be an object");
  const id = r.string(job.ID, "Job.ID") ?? "";
  const type = (r.string(job.Type, "Job.Type") || "service") as JobType;
  const update = r.object(job.Update, "Job.Update");
  const jobUpdate = update
    ? updateStrategy(r, update, "Job.Update", DEFAULT_UPDATE_STRATEGY)
    : type === "service"
      ? DEFAULT_UPDATE_STRATEGY
      : null;
  const jobReschedule = r.object(job.Reschedule, "Job.Reschedule");
  const jobMigrate = r.object(job.Migrate, "Job.Migrate");
  const groups = r.array(job.TaskGroups, "Job.TaskGroups") ?? [];
  const datacenters = mapped(
    r.array(job.Datacenters, "Job.Datacenters") ?? [],
    (d, i) => r.string(d, `Job.Datacenters[${i}]`) ?? "",
  );
  const meta = r.stringMap(job.Meta, "Job.Meta");
  // What the server decides is never taken from the caller, nor are the
  // Consul and Vault tokens kept (Nomad clears them once checked).
  const spec = r.known(job, JOB_FIELDS, "Job", SERVER_DECIDED_JOB_FIELDS);
  spec.ID = id;
  spec.Name = r.string(job.Name, "Job.Name") || id;
  spec.Namespace = r.string(job.Namespace, "Job.Namespace") || "default";
  spec.Region = r.string(job.Region, "Job.Region") || "global";
  spec.Type = type;
  spec.Priority = r.int(job.Priority, "Job.Priority") || JOB_DEFAULT_PRIORITY;
  spec.AllAtOnce = r.bool(job.AllAtOnce, "Job.AllAtOnce") ?? false;
  spec.Datacenters = datacenters.length > 0 ? datacenters : ["*"];
  // Nomad's node pool mutating hook: no pool is the default pool.
  spec.NodePool = r.string(job.NodePool, "Job.NodePool") || "default";
  spec.Constraints = constraints(r, job.Constraints, "Job", "Constraints");
  canonicalPreferences(r, spec, "Job");
  spec.TaskGroups = mapped(groups, (g, i) =>
    taskGroup(
      r,
      r.object(g, `Job.TaskGroups[${i}]`) ?? {},
      `Job.TaskGroups[${i}]`,
      type,
      jobUpdate,
      jobReschedule,
      jobMigrate,
    ),
  );
  spec.Update = jobUpdate;
  spec.Periodic = r.object(job.Periodic, "Job.Periodic") ?? null;
  const parameterized = r.object(job.ParameterizedJob, "Job.ParameterizedJob") ?? null;
  // Nomad's ParameterizedJobConfig.Canonicalize: no payload requirement is "optional".
  spec.ParameterizedJob =
    parameterized && (parameterized.Payload === undefined || parameterized.Payload === "")
      ? { ...parameterized, Payload: "optional" }
      : parameterized;
  spec.Meta = meta && Object.keys(meta).length > 0 ? meta : null;
  spec.Stop = r.bool(job.Stop, "Job.Stop") ?? false;
  spec.ParentID = r.string(job.ParentID, "Job.ParentID") ?? "";
  if (r.errors.length > 0) throw new JobShapeError(r.errors[0]!);
  ignored?.push(...r.ignored);
  return withCanonicalScaling(spec as unknown as JobSpec);
}

/** Job fields checked for their kind but never taken from the caller: what the server decides, and what Nomad's agent does not take from a job. */
const SERVER_DECIDED_JOB_FIELDS: ReadonlySet<string> = new Set([
  ...SERVER_FIELDS,
  "ConsulToken",
  "VaultToken",
  "Reschedule",
  "Migrate",
]);

/**
 * Nomad's NetworkResource as the agent converts it (ApiNetworkResourceToStructs:
 * the Device is not taken, MBits defaults to 0) and canonicalizes it
 * (empty port lists are null, a port's HostNetwork defaults to `default`).
 */
function networks(r: Reader, v: unknown, parent: string, field: string): NetworkResource[] | null {
  const list = r.array(v, parent, field);
  if (!list || list.length === 0) return null;
  const path = joinPath(parent, field);
  return mapped(list, (n, i) => {
    const at = `${path}[${i}]`;
    const o = r.object(n, at) ?? {};
    const dns = r.object(o.DNS, at, "DNS");
    const strings = (x: unknown, p: string) => {
      const a = r.array(x, p);
      return a ? mapped(a, (s, k) => r.string(s, `${p}[${k}]`) ?? "") : null;
    };
    return {
      Mode: r.string(o.Mode, at, "Mode") ?? "",
      Device: "",
      CIDR: r.string(o.CIDR, at, "CIDR") ?? "",
      IP: r.string(o.IP, at, "IP") ?? "",
      Hostname: r.string(o.Hostname, at, "Hostname") ?? "",
      MBits: r.int(o.MBits, at, "MBits") ?? 0,
      DNS: dns
        ? {
            Servers: strings(dns.Servers, `${at}.DNS.Servers`),
            Searches: strings(dns.Searches, `${at}.DNS.Searches`),
            Options: strings(dns.Options, `${at}.DNS.Options`),
          }
        : null,
      ReservedPorts: ports(r, o.ReservedPorts, `${at}.ReservedPorts`),
      DynamicPorts: ports(r, o.DynamicPorts, `${at}.DynamicPorts`),
    };
  });
}

function ports(r: Reader, v: unknown, path: string): NetworkPort[] | null {
  const list = r.array(v, path);
  if (!list || list.length === 0) return null;
  return mapped(list, (p, i) => {
    const o = r.object(p, `${path}[${i}]`) ?? {};
    return {
      Label: r.string(o.Label, `${path}[${i}].Label`) ?? "",
      Value: r.int(o.Value, `${path}[${i}].Value`) ?? 0,
      To: r.int(o.To, `${path}[${i}].To`) ?? 0,
      HostNetwork: r.string(o.HostNetwork, `${path}[${i}].HostNetwork`) || "default",
    };
  });
}

/**
 * A group's volume requests as Nomad's agent converts them
 * (ApiTgToStructsTG): a request that is null or of a type other than
 * `host` or `csi` is dropped, the rest keep Nomad's fields only.
 */
function volumeRequests(r: Reader, v: unknown, path: string): Record<string, VolumeRequest> | null {
  const map = r.object(v, path);
  if (!map) return null;
  const out: Record<string, VolumeRequest> = {};
  for (const name of Object.keys(map)) {
    const at = `${path}.${name}`;
    const o = r.object(map[name], at);
    if (!o) continue;
    const type = r.string(o.Type, at, "Type") ?? "";
    const mount = r.object(o.MountOptions, at, "MountOptions");
    const flags = mount ? r.array(mount.MountFlags, at, "MountOptions.MountFlags") : undefined;
    const request: VolumeRequest = {
      Name: r.string(o.Name, at, "Name") ?? "",
      Type: type,
      Source: r.string(o.Source, at, "Source") ?? "",
      ReadOnly: r.bool(o.ReadOnly, at, "ReadOnly") ?? false,
      AccessMode: r.string(o.AccessMode, at, "AccessMode") ?? "",
      AttachmentMode: r.string(o.AttachmentMode, at, "AttachmentMode") ?? "",
      MountOptions: mount
        ? {
            FSType: r.string(mount.FSType, at, "MountOptions.FSType") ?? "",
            MountFlags: flags
              ? mapped(flags, (f, i) => r.string(f, `${at}.MountOptions.MountFlags[${i}]`) ?? "")
              : null,
          }
        : null,
      PerAlloc: r.bool(o.PerAlloc, at, "PerAlloc") ?? false,
    };
    if (type === "host" || type === "csi") out[name] = request;
  }
  return Object.keys(map).length > 0 ? out : null;
}

/** Nomad's api VolumeMount.Canonicalize (private propagation, read-write), dropping a mount that names no volume as its agent does. */
function volumeMounts(r: Reader, v: unknown, path: string): VolumeMount[] | null {
  const list = r.array(v, path);
  if (!list || list.length === 0) return null;
  const out: VolumeMount[] = [];
  list.forEach((m, i) => {
    const at = `${path}[${i}]`;
    const o = r.object(m, at);
    if (!o) return;
    const volume = r.string(o.Volume, at, "Volume");
    const mount: VolumeMount = {
      Volume: volume ?? "",
      Destination: r.string(o.Destination, at, "Destination") ?? "",
      ReadOnly: r.bool(o.ReadOnly, at, "ReadOnly") ?? false,
      PropagationMode: r.string(o.PropagationMode, at, "PropagationMode") ?? "private",
    };
    if (volume !== undefined) out.push(mount);
  });
  return out;
}

function constraints(r: Reader, v: unknown, parent: string, field: string): Constraint[] | null {
  const list = r.array(v, parent, field);
  if (!list || list.length === 0) return null;
  const path = joinPath(parent, field);
  return mapped(list, (c, i) => {
    const o = r.object(c, `${path}[${i}]`) ?? {};
    return {
      LTarget: r.string(o.LTarget, `${path}[${i}].LTarget`) ?? "",
      RTarget: r.string(o.RTarget, `${path}[${i}].RTarget`) ?? "",
      Operand: r.string(o.Operand, `${path}[${i}].Operand`) || "=",
    };
  });
}

/** Nomad's api Affinity.Canonicalize and Spread.Canonicalize (a weight left out is 50), on the blocks present. */
function canonicalPreferences(r: Reader, o: Json, path: string): void {
  const affinities = r.array(o.Affinities, path, "Affinities");
  if (affinities) {
    o.Affinities = mapped(affinities, (a, i) => {
      const at = `${path}.Affinities[${i}]`;
      const x = r.object(a, at) ?? {};
      return {
        LTarget: r.string(x.LTarget, at, "LTarget") ?? "",
        RTarget: r.string(x.RTarget, at, "RTarget") ?? "",
        Operand: r.string(x.Operand, at, "Operand") ?? "",
        Weight: r.int(x.Weight, at, "Weight") ?? DEFAULT_PREFERENCE_WEIGHT,
      };
    });
  }
  const spreads = r.array(o.Spreads, path, "Spreads");
  if (spreads) {
    o.Spreads = mapped(spreads, (s, i) => {
      const at = `${path}.Spreads[${i}]`;
      const x = r.object(s, at) ?? {};
      const targets = r.array(x.SpreadTarget, at, "SpreadTarget");
      return {
        Attribute: r.string(x.Attribute, at, "Attribute") ?? "",
        Weight: r.int(x.Weight, at, "Weight") ?? DEFAULT_PREFERENCE_WEIGHT,
        SpreadTarget: targets
          ? mapped(targets, (t, j) => {
              const tt = r.object(t, `${at}.SpreadTarget[${j}]`) ?? {};
              return {
                Value: r.string(tt.Value, `${at}.SpreadTarget[${j}].Value`) ?? "",
                Percent: r.int(tt.Percent, `${at}.SpreadTarget[${j}].Percent`) ?? 0,
              };
            })
          : null,
      };
    });
  }
}

const DEFAULT_PREFERENCE_WEIGHT = 50;

function updateStrategy(r: Reader, o: Json, path: string, base: UpdateStrategy): UpdateStrategy {
  return {
    Stagger: r.int(o.Stagger, path, "Stagger") ?? base.Stagger,
    MaxParallel: r.int(o.MaxParallel, path, "MaxParallel") ?? base.MaxParallel,
    HealthCheck: r.string(o.HealthCheck, path, "HealthCheck") ?? base.HealthCheck,
    MinHealthyTime: r.int(o.MinHealthyTime, path, "MinHealthyTime") ?? base.MinHealthyTime,
    HealthyDeadline: r.int(o.HealthyDeadline, path, "HealthyDeadline") ?? base.HealthyDeadline,
    ProgressDeadline: r.int(o.ProgressDeadline, path, "ProgressDeadline") ?? base.ProgressDeadline,
    AutoRevert: r.bool(o.AutoRevert, path, "AutoRevert") ?? base.AutoRevert,
    AutoPromote: r.bool(o.AutoPromote, path, "AutoPromote") ?? base.AutoPromote,
    Canary: r.int(o.Canary, path, "Canary") ?? base.Canary,
  };
}

function reschedulePolicy(r: Reader, o: Json, path: string, base: JobReschedulePolicy): JobReschedulePolicy {
  return {
    Attempts: r.int(o.Attempts, path, "Attempts") ?? base.Attempts,
    Interval: r.int(o.Interval, path, "Interval") ?? base.Interval,
    Delay: r.int(o.Delay, path, "Delay") ?? base.Delay,
    DelayFunction: r.string(o.DelayFunction, path, "DelayFunction") ?? base.DelayFunction,
    MaxDelay: r.int(o.MaxDelay, path, "MaxDelay") ?? base.MaxDelay,
    Unlimited: r.bool(o.Unlimited, path, "Unlimited") ?? base.Unlimited,
  };
}

function migrateStrategy(r: Reader, o: Json, path: string, base: MigrateStrategy): MigrateStrategy {
  return {
    MaxParallel: r.int(o.MaxParallel, path, "MaxParallel") ?? base.MaxParallel,
    HealthCheck: r.string(o.HealthCheck, path, "HealthCheck") ?? base.HealthCheck,
    MinHealthyTime: r.int(o.MinHealthyTime, path, "MinHealthyTime") ?? base.MinHealthyTime,
    HealthyDeadline: r.int(o.HealthyDeadline, path, "HealthyDeadline") ?? base.HealthyDeadline,
  };
}

function restartPolicy(
  r: Reader,
  o: Json | undefined,
  parent: string,
  field: string,
  base: RestartPolicy,
): RestartPolicy {
  if (!o) return base;
  const path = joinPath(parent, field);
  return {
    Attempts: r.int(o.Attempts, path, "Attempts") ?? base.Attempts,
    Interval: r.int(o.Interval, path, "Interval") ?? base.Interval,
    Delay: r.int(o.Delay, path, "Delay") ?? base.Delay,
    Mode: r.string(o.Mode, path, "Mode") ?? base.Mode,
    ...(o.RenderTemplates !== undefined
      ? { RenderTemplates: r.bool(o.RenderTemplates, path, "RenderTemplates") ?? false }
      : {}),
  };
}

function taskGroup(
  r: Reader,
  g: Json,
  path: string,
  type: JobType,
  jobUpdate: UpdateStrategy | null,
  jobReschedule: Json | undefined,
  jobMigrate: Json | undefined,
): TaskGroupSpec {
  const scaling = r.object(g.Scaling, path, "Scaling");
  const scalingMin = scaling ? r.int(scaling.Min, path, "Scaling.Min") : undefined;
  const count = r.int(g.Count, path, "Count") ?? scalingMin ?? 1;
  const batchLike = type === "batch" || type === "sysbatch";
  const ownUpdate = r.object(g.Update, path, "Update");
  let update: UpdateStrategy | null = null;
  if (ownUpdate)
    update = updateStrategy(r, ownUpdate, `${path}.Update`, jobUpdate ?? DEFAULT_UPDATE_STRATEGY);
  else if (jobUpdate && !batchLike) update = jobUpdate;
  // A batch group with an update block that updates nothing is no update block.
  if (update && batchLike && update.MaxParallel === 0) update = null;

  let reschedule: JobReschedulePolicy | null = defaultReschedulePolicy(type);
  const ownReschedule = r.object(g.ReschedulePolicy, path, "ReschedulePolicy");
  const base = reschedule ?? defaultReschedulePolicy("sysbatch")!;
  if (jobReschedule) reschedule = reschedulePolicy(r, jobReschedule, "Job.Reschedule", base);
  if (ownReschedule)
    reschedule = reschedulePolicy(r, ownReschedule, `${path}.ReschedulePolicy`, reschedule ?? base);

  let migrate: MigrateStrategy | null = null;
  const ownMigrate = r.object(g.Migrate, path, "Migrate");
  if (jobMigrate) migrate = migrateStrategy(r, jobMigrate, "Job.Migrate", DEFAULT_MIGRATE_STRATEGY);
  if (ownMigrate)
    migrate = migrateStrategy(r, ownMigrate, `${path}.Migrate`, migrate ?? DEFAULT_MIGRATE_STRATEGY);
  if (!migrate && type === "service") migrate = DEFAULT_MIGRATE_STRATEGY;

  const restart = restartPolicy(
    r,
    r.object(g.RestartPolicy, path, "RestartPolicy"),
    path,
    "RestartPolicy",
    type === "service" || type === "system" ? SERVICE_RESTART : BATCH_RESTART,
  );
  const disk = r.object(g.EphemeralDisk, path, "EphemeralDisk");
  const meta = r.stringMap(g.Meta, path, "Meta");
  const tasks = r.array(g.Tasks, path, "Tasks") ?? [];
  const consul = r.object(g.Consul, path, "Consul");
  const group = r.known(g, GROUP_FIELDS, path);
  if (consul) {
    const c = r.known(consul, CONSUL_FIELDS, `${path}.Consul`);
    c.Namespace = r.string(consul.Namespace, path, "Consul.Namespace") ?? "";
    group.Consul = c;
  }
  group.Name = r.string(g.Name, path, "Name") ?? "";
  group.Count = count;
  group.Update = update;
  group.Migrate = migrate;
  group.Constraints = constraints(r, g.Constraints, path, "Constraints");
  if (Object.hasOwn(group, "Networks")) group.Networks = networks(r, g.Networks, path, "Networks");
  if (Object.hasOwn(group, "Volumes")) group.Volumes = volumeRequests(r, g.Volumes, `${path}.Volumes`);
  canonicalPreferences(r, group, path);
  group.RestartPolicy = restart;
  group.ReschedulePolicy = reschedule;
  group.EphemeralDisk = disk
    ? {
        Sticky: r.bool(disk.Sticky, path, "EphemeralDisk.Sticky") ?? false,
        SizeMB: r.int(disk.SizeMB, path, "EphemeralDisk.SizeMB") ?? DEFAULT_EPHEMERAL_DISK.SizeMB,
        Migrate: r.bool(disk.Migrate, path, "EphemeralDisk.Migrate") ?? false,
      }
    : DEFAULT_EPHEMERAL_DISK;
  group.Tasks = mapped(tasks, (t, i) =>
    task(r, r.object(t, `${path}.Tasks[${i}]`) ?? {}, `${path}.Tasks[${i}]`, restart),
  );
  group.Meta = meta && Object.keys(meta).length > 0 ? meta : null;
  group.MaxClientDisconnect = r.int(g.MaxClientDisconnect, path, "MaxClientDisconnect") ?? null;
  group.StopAfterClientDisconnect =
    r.int(g.StopAfterClientDisconnect, path, "StopAfterClientDisconnect") ?? null;
  return group as unknown as TaskGroupSpec;
}

function task(r: Reader, t: Json, path: string, groupRestart: RestartPolicy): TaskSpec {
  const res = r.known(r.object(t.Resources, path, "Resources") ?? {}, RESOURCE_FIELDS, `${path}.Resources`);
  const cores = r.int(res.Cores, path, "Resources.Cores");
  const cpu = r.int(res.CPU, path, "Resources.CPU");
  // `res` is a fresh copy: the defaults go onto it as a spread would put them.
  // Nomad: CPU defaults to 100 only when neither CPU nor cores is given.
  res.CPU = cpu ?? (cores === undefined ? 100 : 0);
  res.Cores = cores ?? 0;
  res.MemoryMB = r.int(res.MemoryMB, path, "Resources.MemoryMB") ?? 300;
  res.MemoryMaxMB = r.int(res.MemoryMaxMB, path, "Resources.MemoryMaxMB") ?? 0;
  res.DiskMB = r.int(res.DiskMB, path, "Resources.DiskMB") ?? 0;
  res.IOPS = r.int(res.IOPS, path, "Resources.IOPS") ?? 0;
  res.Networks = networks(r, res.Networks, path, "Resources.Networks");
  res.Devices = r.array(res.Devices, path, "Resources.Devices") ?? null;
  const resources = res as unknown as TaskResources;
  const lifecycle = r.object(t.Lifecycle, path, "Lifecycle");
  const hook = lifecycle ? (r.string(lifecycle.Hook, path, "Lifecycle.Hook") ?? "") : "";
  const meta = r.stringMap(t.Meta, path, "Meta");
  const identity = r.object(t.Identity, path, "Identity");
  const out = r.known(t, TASK_FIELDS, path);
  if (identity) {
    const id = r.known(identity, IDENTITY_FIELDS, `${path}.Identity`);
    id.Env = r.bool(identity.Env, path, "Identity.Env") ?? false;
    id.File = r.bool(identity.File, path, "Identity.File") ?? false;
    out.Identity = id;
  }
  out.Name = r.string(t.Name, path, "Name") ?? "";
  out.Driver = r.string(t.Driver, path, "Driver") ?? "";
  out.Config = r.object(t.Config, path, "Config") ?? null;
  out.Constraints = constraints(r, t.Constraints, path, "Constraints");
  canonicalPreferences(r, out, path);
  out.Resources = resources;
  out.RestartPolicy = restartPolicy(
    r,
    r.object(t.RestartPolicy, path, "RestartPolicy"),
    path,
    "RestartPolicy",
    groupRestart,
  );
  out.KillTimeout = r.int(t.KillTimeout, path, "KillTimeout") ?? 5 * SECOND;
  out.LogConfig = r.object(t.LogConfig, path, "LogConfig") ?? { MaxFiles: 10, MaxFileSizeMB: 10 };
  out.Leader = r.bool(t.Leader, path, "Leader") ?? false;
  out.Lifecycle =
    lifecycle && hook !== ""
      ? { Hook: hook, Sidecar: r.bool(lifecycle.Sidecar, path, "Lifecycle.Sidecar") ?? false }
      : null;
  out.Meta = meta && Object.keys(meta).length > 0 ? meta : null;
  if (Object.hasOwn(out, "VolumeMounts"))
    out.VolumeMounts = volumeMounts(r, t.VolumeMounts, `${path}.VolumeMounts`);
  return out as unknown as TaskSpec;
}
