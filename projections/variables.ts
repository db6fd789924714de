import type { ApplyContext, Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import {
  VAR_OPS,
  type VariableApplied,
  type VariableEncryptedSpec,
  type VariableEvent,
} from "../streams/variables.ts";

/** Nomad's VariableEncrypted as stored: the sealed items and their metadata. Never the items in clear. */
export type VariableRow = VariableEncryptedSpec & {
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
};

/** Nomad's VariablesQuota: the bytes of sealed data a namespace holds (len(Data) summed). */
export interface VariablesQuotaRow {
  readonly Namespace: string;
  readonly Size: number;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

export type VariableTable = Table<VariableRow>;

/** The primary key: Nomad's compound (Namespace, Path) index, in the same order. */
export const variableKey = (namespace: string, path: string) => `${namespace}\u0000${path}`;

/** Nomad's wildcard namespace sentinel: no variable lives there. */
const ALL_NAMESPACES = "*";

/** Nomad's validVariablePath. */
export const VARIABLE_PATH = /^[a-zA-Z0-9\-_~/]{1,128}$/;

/** Nomad's math.MaxInt, which its quota overflow message names. */
const MAX_INT64 = "9223372036854775807";

/**
 * Nomad's validatePath (nomad/structs/variables.go), with its texts: the
 * path's characters and length, and the reserved `nomad/` tree, where only
 * `nomad/jobs[/...]` and exactly one level below `nomad/job-templates` may be
 * written. Undefined when the path is valid.
 */
export function variablePathError(path: string): string | undefined {
  if (path.length === 0) return "variable requires path";
  if (!VARIABLE_PATH.test(path)) return `invalid path ${JSON.stringify(path)}`;
  const parts = path.split("/");
  if (parts[0] !== "nomad") return undefined;
  if (parts.length === 1) {
    return '"nomad" is a reserved top-level directory path, but you may write variables to "nomad/jobs", "nomad/job-templates", or below';
  }
  if (parts[1] === "jobs") return undefined;
  if (parts[1] === "job-templates" && parts.length === 3) return undefined;
  if (parts[1] === "job-templates") {
    return '"nomad/job-templates" is a reserved directory path, but you may write variables at the level below it, for example, "nomad/job-templates/template-name"';
  }
  return 'only paths at "nomad/jobs" or "nomad/job-templates" and below are valid paths under the top-level "nomad" directory';
}

/**
 * Nomad's namespace delete refusal while the namespace holds a variable
 * (state store DeleteNamespaces), or undefined. Like Nomad it names no path:
 * the caller may not be allowed to list them.
 */
export function namespaceVariablesRefusal(variables: VariableTable, namespace: string): string | undefined {
  for (const _ of variables.withPrefix(variableKey(namespace, ""))) {
    return (
      `namespace ${JSON.stringify(namespace)} contains at least one variable. ` +
      "All variables in namespace must be deleted before it can be deleted"
    );
  }
  return undefined;
}

/** The number of bytes Data holds (Nomad counts len(Data) of the raw bytes), from its base64 alone. */
export function sealedSize(data: string): number {
  return Buffer.byteLength(data, "base64");
}

/**
 * Why a check-and-set expecting ModifyIndex `cas` fails against `existing`
 * (the row now at the path), as Nomad's varSetCASTxn and svDeleteCASTxn
 * decide it (the same rules for both); undefined when it holds. Every
 * reason starts with Nomad's "cas error:" (its HTTP layer answers such
 * errors 409), which is how handlers tell a conflict from other rejections.
 */
export function casConflict(
  cas: number,
  existing: VariableRow | undefined,
  namespace: string,
  path: string,
): string | undefined {
  const where = `variable ${JSON.stringify(path)} in namespace ${JSON.stringify(namespace)}`;
  // 0: set-if-absent, and a delete-if-absent that succeeds when there is nothing.
  if (cas === 0) {
    return existing
      ? `${CAS_ERROR} ${where} exists (ModifyIndex ${existing.ModifyIndex}), expected none`
      : undefined;
  }
  if (!existing) return `${CAS_ERROR} ${where} does not exist, expected ModifyIndex ${cas}`;
  if (existing.ModifyIndex !== cas) {
    return `${CAS_ERROR} ${where} has ModifyIndex ${existing.ModifyIndex}, expected ${cas}`;
  }
  return undefined;
}

/** The prefix of every check-and-set conflict's rejection reason. */
export const CAS_ERROR = "cas error:";

/**
 * Nomad's variables and variables_quota tables (nomad/state/state_store_variables.go).
 * The check-and-set is decided again here, at the record's index: the
 * handler's own check saw the table before the append, and another writer
 * may have come in between.
 */
export function variablesProjection() {
  const variables = new Table<VariableRow>({
    name: "variables",
    key: (v) => variableKey(v.Namespace, v.Path),
    // Nomad's key_id index: a root key still sealing a variable is not garbage (IsRootKeyMetaInUse).
    indexes: { key_id: (v) => v.KeyID },
  });
  // Keyed by the namespace lowercased, as Nomad's index is (its row keeps the name it was made with).
  const quotas = new Table<VariablesQuotaRow>({
    name: "variables_quota",
    key: (q) => q.Namespace.toLowerCase(),
  });

  /** The namespace's quota row with `size`: Nomad's quotaUsed, inserted at this index. */
  const putQuota = (ctx: ApplyContext, namespace: string, row: VariablesQuotaRow | undefined, size: number) =>
    ctx.put(quotas, {
      Namespace: row?.Namespace ?? namespace,
      Size: size,
      CreateIndex: row?.CreateIndex ?? ctx.index,
      ModifyIndex: ctx.index,
    });

  const set = (ctx: ApplyContext, spec: VariableEncryptedSpec, existing: VariableRow | undefined) => {
    const change = sealedSize(spec.Data) - (existing ? sealedSize(existing.Data) : 0);
    const quota = quotas.get(spec.Namespace.toLowerCase());
    const used = quota?.Size ?? 0;
    // Nomad refuses to overflow its int64; here the bound is the largest exact integer.
    if (change > Number.MAX_SAFE_INTEGER - used) {
      return ctx.reject(
        400,
        `variables can store a maximum of ${MAX_INT64} bytes of encrypted data per namespace`,
      );
    }
    // Nomad's varSetTxn skips a write equal to what is stored; a fresh nonce
    // per write makes that impossible, so every set is a change.
    ctx.put(variables, {
      CreateIndex: existing?.CreateIndex ?? ctx.index,
      ModifyIndex: ctx.index,
      Namespace: spec.Namespace,
      Path: spec.Path,
      Data: spec.Data,
      KeyID: spec.KeyID,
      // An existing variable keeps its creation.
      CreateTime: existing?.CreateTime ?? spec.CreateTime,
      ModifyTime: spec.ModifyTime,
    });
    // The quota row moves only when the size does (and is made then).
    if (change !== 0)
      putQuota(ctx, spec.Namespace, quota, change > 0 ? used + change : used - Math.min(used, -change));
  };

  const remove = (ctx: ApplyContext, existing: VariableRow | undefined) => {
    // Deleting nothing changes nothing, not even the table index (svDeleteTxn).
    if (!existing) return;
    ctx.delete(variables, variableKey(existing.Namespace, existing.Path));
    // A delete rewrites the quota row it finds, whatever the size.
    const quota = quotas.get(existing.Namespace.toLowerCase());
    if (quota)
      putQuota(ctx, existing.Namespace, quota, quota.Size - Math.min(quota.Size, sealedSize(existing.Data)));
  };

  const projection: Projection = {
    name: "variables",
    version: 1,
    tables: [variables, quotas],
    handles: new Set(["VariableApplied"]),
    evolve(ctx, event) {
      const data = (event as VariableEvent).data;
      const invalid = invalidRecord(data);
      if (invalid) return ctx.reject(400, invalid);
      const { Op, Namespace, Path } = data;
      const existing = variables.get(variableKey(Namespace, Path));
      if (Op === "cas" || Op === "delete-cas") {
        const conflict = casConflict(data.CasIndex ?? 0, existing, Namespace, Path);
        if (conflict) return ctx.reject(409, conflict);
      }
      if (Op === "set" || Op === "cas") return set(ctx, data.Var!, existing);
      return remove(ctx, existing);
    },
  };
  return { projection, variables, quotas };
}

/**
 * What makes a record unfit to apply, whoever wrote it (the handler checks
 * all of this first; a log written by another tool must not put a variable
 * no client could address, or an unsealed one, in the table).
 */
function invalidRecord(data: VariableApplied): string | undefined {
  if (!VAR_OPS.includes(data.Op)) return `Invalid variable operation '${String(data.Op)}'`;
  if (data.Namespace === ALL_NAMESPACES) return `can not target wildcard ("*")namespace`;
  if (data.Namespace === "") return "variable requires a namespace";
  if (data.Path === "") return "delete requires a Path";
  const cas = data.CasIndex;
  if (
    (data.Op === "cas" || data.Op === "delete-cas") &&
    (cas === undefined || !Number.isSafeInteger(cas) || cas < 0)
  ) {
    return `${data.Op} requires a non-negative CasIndex`;
  }
  if (data.Op === "delete" || data.Op === "delete-cas") {
    return data.Var === null || data.Var === undefined ? undefined : `${data.Op} carries no variable`;
  }
  const v = data.Var;
  if (!v) return `${data.Op} requires the encrypted variable`;
  if (v.Namespace !== data.Namespace || v.Path !== data.Path) {
    return `the variable is ${JSON.stringify(v.Path)} in namespace ${JSON.stringify(v.Namespace)}, not the record's`;
  }
  const pathError = variablePathError(v.Path);
  if (pathError) return pathError;
  if (v.KeyID === "" || v.Data === "") return "variable data is not sealed: KeyID and Data are required";
  return undefined;
}
