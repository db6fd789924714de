import type { NetworkPort, NetworkResource } from "../../streams/allocs.ts";
import type {
  Constraint,
  JobReschedulePolicy,
  JobSpec,
  RestartPolicy,
  TaskGroupSpec,
  TaskSpec,
  UpdateStrategy,
} from "../../streams/jobs.ts";
import { JOB_TYPES } from "../../streams/jobs.ts";
import { formatErrors, goDuration } from "./multierror.ts";
import { parameterizedConfigErrors, periodicConfigErrors } from "./periodic-validate.ts";
import { compileRegexp } from "./regexp.ts";
import { validateGroupScaling } from "./scaling-policy.ts";
import {
  affinityBlockErrors,
  spreadBlockErrors,
  taskConstraintOperandErrors,
} from "./validate-preferences.ts";
import { volumeMountErrors, volumeRequestErrors } from "./validate-volumes.ts";

/** Nomad's priority bounds (JobMinPriority, default JobMaxPriority). */
export const JOB_MIN_PRIORITY = 1;
export const JOB_MAX_PRIORITY = 100;

const MIN_RESCHEDULE_DELAY = 5e9;
const MIN_RESCHEDULE_INTERVAL = 15e9;
const RESTART_MODES = ["delay", "fail"];
const DELAY_FUNCTIONS = ["constant", "exponential", "fibonacci"];
const HEALTH_CHECKS = ["checks", "task_states", "manual"];

/**
 * Nomad's Job.Validate plus the admission check on priority: the messages
 * Nomad gives, as go-multierror renders them. Returns the error text, or
 * undefined for a valid job.
 */
export function validateJob(job: JobSpec): string | undefined {
  const errors = jobValidationErrors(job);
  return errors.length > 0 ? formatErrors(errors) : undefined;
}

/** The entries of Nomad's Job.Validate multierror, each as its Error() text (JobValidateResponse.ValidationErrors). */
export function jobValidationErrors(job: JobSpec): string[] {
  const errors: string[] = [];
  if (job.Region === "") errors.push("Missing job region");
  if (job.ID === "") errors.push("Missing job ID");
  else if (job.ID.includes(" ")) errors.push("Job ID contains a space");
  else if (job.ID.includes("\u0000")) errors.push("Job ID contains a null character");
  if (job.Name === "") errors.push("Missing job name");
  else if (job.Name.includes("\u0000")) errors.push("Job Name contains a null character");
  if (job.Namespace === "") errors.push("Job must be in a namespace");
  if (!(JOB_TYPES as readonly string[]).includes(job.Type))
    errors.push(`Invalid job type: ${JSON.stringify(job.Type)}`);
  if (job.Datacenters.length === 0) errors.push("Missing job datacenters");
  else if (job.Datacenters.includes("")) errors.push("Job datacenter must be non-empty string");
  if (job.TaskGroups.length === 0) errors.push("Missing job task groups");
  constraintErrors(job.Constraints, errors);
  errors.push(...affinityBlockErrors(job.Type, job), ...spreadBlockErrors(job.Type, job));
  const seen = new Map<string, number>();
  for (let i = 0; i < job.TaskGroups.length; i++) {
    const tg = job.TaskGroups[i]!;
    if (tg.Name === "") errors.push(`Job task group ${i + 1} missing name`);
    else if (seen.has(tg.Name))
      errors.push(`Job task group ${i + 1} redefines '${tg.Name}' from group ${seen.get(tg.Name)! + 1}`);
    else seen.set(tg.Name, i);
    const stopAfter = tg.StopAfterClientDisconnect;
    if (stopAfter !== null && stopAfter !== 0) {
      if (stopAfter > 0 && job.Type !== "batch" && job.Type !== "service") {
        errors.push("stop_after_client_disconnect can only be set in batch and service jobs");
      } else if (stopAfter < 0) errors.push("stop_after_client_disconnect must be a positive value");
    }
    if (job.Type === "system" && tg.Count > 1) {
      errors.push(
        `Job task group ${tg.Name} has count ${tg.Count}. Count cannot exceed 1 with system scheduler`,
      );
    }
  }
  for (const tg of job.TaskGroups) {
    const groupErrors = validateTaskGroup(job, tg);
    if (groupErrors.length > 0)
      errors.push(`Task group ${tg.Name} validation failed: ${formatErrors(groupErrors)}`);
  }
  if (job.Periodic && job.Periodic.Enabled !== false) {
    if (job.Type !== "batch" && job.Type !== "sysbatch") {
      errors.push(`Periodic can only be used with "batch" or "sysbatch" scheduler`);
    }
    const periodic = periodicConfigErrors(job.Periodic);
    if (periodic.length > 0) errors.push(formatErrors(periodic));
  }
  if (job.ParameterizedJob && job.Dispatched !== true) {
    if (job.Type !== "batch" && job.Type !== "sysbatch") {
      errors.push(`Parameterized job can only be used with "batch" or "sysbatch" scheduler`);
    }
    const parameterized = parameterizedConfigErrors(job.ParameterizedJob);
    if (parameterized.length > 0) errors.push(formatErrors(parameterized));
  }
  if (job.Priority < JOB_MIN_PRIORITY || job.Priority > JOB_MAX_PRIORITY) {
    errors.push(`job priority must be between [${JOB_MIN_PRIORITY}, ${JOB_MAX_PRIORITY}]`);
  }
  return errors;
}

function validateTaskGroup(job: JobSpec, tg: TaskGroupSpec): string[] {
  const errors: string[] = [];
  if (tg.Name === "") errors.push("Missing task group name");
  else if (tg.Name.includes("\u0000")) errors.push("Task group name contains null character");
  if (tg.Count < 0) errors.push("Task group count can't be negative");
  if (tg.Tasks.length === 0) errors.push("Missing tasks for task group");
  if (tg.MaxClientDisconnect !== null && tg.StopAfterClientDisconnect !== null) {
    errors.push(
      "Task group cannot be configured with both max_client_disconnect and stop_after_client_disconnect",
    );
  }
  if (tg.MaxClientDisconnect !== null && tg.MaxClientDisconnect < 0)
    errors.push("max_client_disconnect cannot be negative");
  constraintErrors(tg.Constraints, errors);
  errors.push(...affinityBlockErrors(job.Type, tg));
  if (tg.RestartPolicy) errors.push(...validateRestart(tg.RestartPolicy));
  else errors.push(`Task Group ${tg.Name} should have a restart policy`);
  errors.push(...spreadBlockErrors(job.Type, tg));
  if (job.Type !== "system") {
    if (tg.ReschedulePolicy) errors.push(...validateReschedule(tg.ReschedulePolicy));
  } else if (tg.ReschedulePolicy) {
    errors.push(`System jobs should not have a reschedule policy`);
  }
  if (tg.EphemeralDisk.SizeMB < 10) errors.push(`minimum DiskMB value is 10; got ${tg.EphemeralDisk.SizeMB}`);
  if (tg.Update) {
    if (job.Type === "service" || job.Type === "system") errors.push(...validateUpdate(tg.Update));
    else errors.push(`Job type ${JSON.stringify(job.Type)} does not allow update block`);
  }
  if (tg.Migrate && job.Type !== "service")
    errors.push(`Job type ${JSON.stringify(job.Type)} does not allow migrate block`);
  if (tg.Migrate && tg.Migrate.MaxParallel < 0)
    errors.push("MaxParallel must be >= 0 but found " + tg.Migrate.MaxParallel);
  const names = new Map<string, number>();
  let leaders = 0;
  for (let i = 0; i < tg.Tasks.length; i++) {
    const t = tg.Tasks[i]!;
    if (t.Name === "") errors.push(`Task ${i + 1} missing name`);
    else if (names.has(t.Name))
      errors.push(`Task ${i + 1} redefines '${t.Name}' from task ${names.get(t.Name)! + 1}`);
    else names.set(t.Name, i);
    if (t.Leader) leaders++;
  }
  if (leaders > 1) errors.push("Only one task may be marked as leader");
  errors.push(...volumeRequestErrors(job.Type, tg));
  const networkErrors = validateNetworks(tg);
  if (networkErrors.length > 0)
    errors.push(`Task group network validation failed: ${formatErrors(networkErrors)}`);
  const scaling = validateGroupScaling(tg);
  if (scaling) errors.push(scaling);
  for (const t of tg.Tasks) {
    const taskErrors = [
      ...validateTask(t, tg.EphemeralDisk.SizeMB),
      ...taskConstraintOperandErrors(t.Constraints),
      ...affinityBlockErrors(job.Type, t),
      ...volumeMountErrors(t, tg),
    ];
    if (taskErrors.length > 0) errors.push(`Task ${t.Name} validation failed: ${formatErrors(taskErrors)}`);
  }
  return errors;
}

const MAX_UINT16 = 65_535;

/** Nomad's TaskGroup.validateNetworks: unique port labels, static ports unique per host network and in range, `To` in range. */
function validateNetworks(tg: TaskGroupSpec): string[] {
  const errors: string[] = [];
  const labels = new Map<string, string>();
  const staticPorts = new Map<string, Map<number, string>>();
  for (const net of networksOf(tg.Networks)) {
    for (const port of [...(net.ReservedPorts ?? []), ...(net.DynamicPorts ?? [])]) {
      const other = labels.get(port.Label);
      if (other !== undefined) errors.push(`Port label ${port.Label} already in use by ${other}`);
      else labels.set(port.Label, "taskgroup network");
      checkStatic(staticPorts, errors, port, `taskgroup network:${port.Label}`);
      if (port.To < -1)
        errors.push(`Port ${JSON.stringify(port.Label)} cannot be mapped to negative value ${port.To}`);
      else if (port.To > MAX_UINT16)
        errors.push(
          `Port ${JSON.stringify(port.Label)} cannot be mapped to a port (${port.To}) greater than ${MAX_UINT16}`,
        );
    }
    if (net.Hostname !== "" && !net.Hostname.includes("${") && !isDomainName(net.Hostname))
      errors.push("Hostname is not a valid DNS name");
  }
  for (const task of tg.Tasks) {
    for (const net of networksOf(task.Resources?.Networks)) {
      for (const port of [...(net.ReservedPorts ?? []), ...(net.DynamicPorts ?? [])]) {
        const other = labels.get(port.Label);
        if (other !== undefined) errors.push(`Port label ${port.Label} already in use by ${other}`);
        checkStatic(staticPorts, errors, port, `${task.Name}:${port.Label}`);
      }
    }
  }
  return errors;
}

// Module-level, not a closure per call: under tsx (keepNames) each closure
// created costs a defineProperty of its name, on every registration.
function checkStatic(
  staticPorts: Map<string, Map<number, string>>,
  errors: string[],
  port: NetworkPort,
  owner: string,
): void {
  if (port.Value === 0) return;
  const network = port.HostNetwork || "default";
  const taken = staticPorts.get(network) ?? new Map<number, string>();
  const other = taken.get(port.Value);
  if (other !== undefined) errors.push(`Static port ${port.Value} already reserved by ${other}`);
  else if (port.Value > MAX_UINT16)
    errors.push(`Port ${port.Label} (${port.Value}) cannot be greater than ${MAX_UINT16}`);
  else {
    taken.set(port.Value, owner);
    staticPorts.set(network, taken);
  }
}

const networksOf = (v: unknown): readonly NetworkResource[] =>
  Array.isArray(v) ? (v as NetworkResource[]) : [];

/** miekg/dns IsDomainName's limits: labels of 1 to 63 octets, 255 octets in all. */
function isDomainName(name: string): boolean {
  const labels = (name.endsWith(".") ? name.slice(0, -1) : name).split(".");
  if (name.length > 254) return false;
  if (name === ".") return true;
  for (const l of labels) if (l.length === 0 || l.length > 63) return false;
  return true;
}

function validateTask(t: TaskSpec, diskMB: number): string[] {
  const errors: string[] = [];
  if (t.Name === "") errors.push("Missing task name");
  if (/[/\\]/.test(t.Name)) errors.push("Task name cannot include slashes");
  if (t.Name.includes("\u0000")) errors.push("Task name cannot include null characters");
  if (t.Driver === "") errors.push("Missing task driver");
  if (t.KillTimeout < 0) errors.push("KillTimeout must be a positive value");
  const r = t.Resources;
  if (r.CPU < 1 && r.Cores === 0) errors.push(`minimum CPU value is 1; got ${r.CPU}`);
  if (r.MemoryMB < 10) errors.push(`minimum MemoryMB value is 10; got ${r.MemoryMB}`);
  if (r.MemoryMaxMB !== 0 && r.MemoryMaxMB < r.MemoryMB) {
    errors.push(`MemoryMaxMB value (${r.MemoryMaxMB}) should be larger than MemoryMB value (${r.MemoryMB})`);
  }
  errors.push(...validateLogConfig(t.LogConfig, diskMB));
  constraintErrors(t.Constraints, errors);
  return errors;
}

/** Nomad's LogConfig.Validate: the task's logs must fit, with room to spare, in its group's ephemeral disk. */
function validateLogConfig(logConfig: unknown, diskMB: number): string[] {
  const config = logConfig as Record<string, unknown> | null;
  const log = { MaxFiles: logField(config, "MaxFiles"), MaxFileSizeMB: logField(config, "MaxFileSizeMB") };
  const errors: string[] = [];
  if (log.MaxFiles < 1) errors.push(`minimum number of files is 1; got ${log.MaxFiles}`);
  if (log.MaxFileSizeMB < 1) errors.push(`minimum file size is 1MB; got ${log.MaxFileSizeMB}`);
  const usage = log.MaxFiles * log.MaxFileSizeMB;
  if (diskMB <= usage) {
    errors.push(`log storage (${usage} MB) must be less than requested disk capacity (${diskMB} MB)`);
  }
  return errors;
}

/** A field the job left out is Go's zero value, as Nomad's decoder leaves it. */
function logField(config: Record<string, unknown> | null, name: string): number {
  const v = config?.[name];
  return typeof v === "number" ? v : 0;
}

/**
 * Each constraint's message, numbered from 1. A loop rather than a closure
 * per call: under tsx (keepNames) each closure created costs a
 * defineProperty of its name, on every registration.
 */
function constraintErrors(list: readonly Constraint[] | null | undefined, errors: string[]): void {
  if (!list) return;
  for (let i = 0; i < list.length; i++) {
    const err = validateConstraint(list[i]!);
    if (err) errors.push(`Constraint ${i + 1} validation failed: ${err}`);
  }
}

/** Nomad's Constraint.Validate: one message, or undefined. */
export function validateConstraint(c: Constraint): string | undefined {
  const errors: string[] = [];
  if (c.Operand === "") errors.push("Missing constraint operand");
  let requireLTarget = true;
  switch (c.Operand) {
    case "distinct_hosts":
      requireLTarget = false;
      break;
    case "set_contains":
    case "set_contains_all":
    case "set_contains_any":
      if (c.RTarget === "") errors.push("Set contains constraint requires an RTarget");
      break;
    case "regexp":
      try {
        compileRegexp(c.RTarget);
      } catch (err) {
        errors.push(`Regular expression failed to compile: ${(err as Error).message}`);
      }
      break;
    case "version":
    case "semver":
      if (c.RTarget === "") errors.push("Version constraint is invalid: Malformed constraint: ");
      break;
    case "distinct_property":
      if (c.RTarget !== "" && !/^[0-9]+$/.test(c.RTarget)) {
        errors.push(`Failed to convert RTarget ${JSON.stringify(c.RTarget)} to uint64`);
      }
      break;
    case "is_set":
    case "is_not_set":
      if (c.RTarget !== "") errors.push(`Operator ${JSON.stringify(c.Operand)} does not support an RTarget`);
      break;
    case "=":
    case "==":
    case "is":
    case "!=":
    case "not":
    case "<":
    case "<=":
    case ">":
    case ">=":
      if (c.RTarget === "") errors.push(`Operator ${JSON.stringify(c.Operand)} requires an RTarget`);
      break;
    default:
      if (c.Operand !== "") errors.push(`Unknown constraint type ${JSON.stringify(c.Operand)}`);
  }
  if (requireLTarget && c.LTarget === "") errors.push("No LTarget provided but is required by constraint");
  return errors.length > 0 ? formatErrors(errors) : undefined;
}

function validateRestart(p: RestartPolicy): string[] {
  const errors: string[] = [];
  if (!RESTART_MODES.includes(p.Mode)) errors.push(`Unsupported restart mode: ${JSON.stringify(p.Mode)}`);
  if (p.Attempts === 0 && p.Mode !== "fail")
    errors.push(`Restart policy ${JSON.stringify(p.Mode)} with ${p.Attempts} attempts is ambiguous`);
  if (p.Interval.valueOf() === 0 && p.Attempts > 0) errors.push("Interval can not be zero");
  if (p.Attempts > 0 && p.Interval > 0 && p.Delay * p.Attempts > p.Interval) {
    errors.push(
      `Nomad can't restart the TaskGroup ${p.Attempts} times in an interval of: ${goDuration(p.Interval)} with a delay of: ${goDuration(p.Delay)}`,
    );
  }
  return errors;
}

function validateReschedule(p: JobReschedulePolicy): string[] {
  const errors: string[] = [];
  const enabled = p.Attempts > 0 || p.Unlimited;
  if (!enabled) return errors;
  if (p.Delay < MIN_RESCHEDULE_DELAY) {
    errors.push(`Delay cannot be less than ${goDuration(MIN_RESCHEDULE_DELAY)} (got ${goDuration(p.Delay)})`);
  }
  if (!DELAY_FUNCTIONS.includes(p.DelayFunction)) {
    errors.push(
      `Invalid delay function ${JSON.stringify(p.DelayFunction)}, must be one of ${JSON.stringify(DELAY_FUNCTIONS)}`,
    );
  }
  if (p.DelayFunction !== "constant" && p.MaxDelay < p.Delay) {
    errors.push(`Max Delay cannot be less than Delay ${goDuration(p.Delay)} (got ${goDuration(p.MaxDelay)})`);
  }
  if (!p.Unlimited && p.Interval < MIN_RESCHEDULE_INTERVAL) {
    errors.push(
      `Interval cannot be less than ${goDuration(MIN_RESCHEDULE_INTERVAL)} (got ${goDuration(p.Interval)})`,
    );
  }
  if (p.Unlimited && p.Attempts > 0) {
    errors.push(
      `Reschedule Policy with Attempts = ${p.Attempts}, Interval = ${goDuration(p.Interval)}, and Unlimited = true is ambiguous`,
    );
  }
  return errors;
}

function validateUpdate(u: UpdateStrategy): string[] {
  const errors: string[] = [];
  if (!HEALTH_CHECKS.includes(u.HealthCheck))
    errors.push(`Invalid health check given: ${JSON.stringify(u.HealthCheck)}`);
  if (u.MaxParallel < 0) errors.push(`Max parallel can not be less than zero: ${u.MaxParallel} < 0`);
  if (u.Canary < 0) errors.push(`Canary count can not be less than zero: ${u.Canary} < 0`);
  if (u.Canary === 0 && u.AutoPromote) errors.push("Auto Promote requires a Canary count greater than zero");
  if (u.MinHealthyTime < 0)
    errors.push(`Minimum healthy time may not be less than zero: ${goDuration(u.MinHealthyTime)}`);
  if (u.HealthyDeadline <= 0)
    errors.push(`Healthy deadline must be greater than zero: ${goDuration(u.HealthyDeadline)}`);
  if (u.ProgressDeadline < 0)
    errors.push(`Progress deadline must be zero or greater: ${goDuration(u.ProgressDeadline)}`);
  if (u.MinHealthyTime >= u.HealthyDeadline) {
    errors.push(
      `Minimum healthy time must be less than healthy deadline: ${goDuration(u.MinHealthyTime)} > ${goDuration(u.HealthyDeadline)}`,
    );
  }
  if (u.ProgressDeadline !== 0 && u.HealthyDeadline >= u.ProgressDeadline) {
    errors.push(
      `Healthy deadline must be less than progress deadline: ${goDuration(u.HealthyDeadline)} > ${goDuration(u.ProgressDeadline)}`,
    );
  }
  if (u.Stagger <= 0) errors.push(`Stagger must be greater than zero: ${goDuration(u.Stagger)}`);
  return errors;
}
