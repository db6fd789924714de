import { CAS_ERROR, casConflict, type VariableRow, variableKey } from "../../projections/variables.ts";
import type { VariableApplied, VarOp } from "../../streams/variables.ts";
import { ApiError } from "../api/api-error.ts";
import { commit } from "../api/commit.ts";
import type { ApiContext } from "../api/context.ts";
import type { AuthenticatedIdentity } from "../auth/authenticate.ts";
import { allowsVariable } from "./variable-access.ts";
import {
  decryptItems,
  encryptWithActiveKey,
  VariableDecryptError,
  type VariableItems,
  VariableKeyUnavailable,
} from "./variable-crypto.ts";
import { variableError } from "./variable-validation.ts";
import { absentVariable, decryptedView, type VariableDecryptedView } from "./variable-views.ts";

/** One Variables.Apply, as the HTTP handler built it. */
export interface VariableWrite {
  readonly op: VarOp;
  readonly namespace: string;
  readonly path: string;
  /** set/cas: the items to seal. */
  readonly items?: VariableItems;
  /** cas/delete-cas: the ModifyIndex expected (0: must not exist). */
  readonly cas?: number;
}

/** What Variables.Apply answered: the write and its index, or the variable it conflicted with. */
export type VariableWriteResult =
  | { readonly kind: "ok"; readonly index: number; readonly output: VariableDecryptedView | null }
  | {
      readonly kind: "conflict";
      readonly conflict: VariableDecryptedView;
      /** Nomad's X-Nomad-Index of a conflict: the conflicting variable's ModifyIndex. */
      readonly index: number;
    };

/** Decryption failures are the server's (a key it lacks, data that does not open): 500, with why. */
export function asApiError(err: unknown): never {
  if (err instanceof VariableKeyUnavailable || err instanceof VariableDecryptError) {
    throw new ApiError(500, err.message);
  }
  throw err;
}

/** The items of `row`, opened with this server's keyring; a key it lacks is a clear 500, never garbage. */
export function openVariable(ctx: ApiContext, row: VariableRow): VariableItems {
  try {
    return decryptItems(ctx.keyring, row);
  } catch (err) {
    return asApiError(err);
  }
}

/**
 * Nomad's Variables.Apply on this side of the log (nomad/variables_endpoint.go):
 * the ACL check (write for set/cas, destroy for deletes; never a workload's
 * implicit access), validation, sealing under the active root key, and a
 * first check-and-set against the table now. A conflict seen here is
 * answered without writing anything; one that arises before the record
 * applies is decided there (projections/variables.ts) and answered the same
 * way. A conflict answers the variable as it stands after the write's
 * index, with its items only for a caller who may read it (Nomad's
 * conflict-redacted).
 */
export async function applyVariable(
  ctx: ApiContext,
  identity: AuthenticatedIdentity,
  write: VariableWrite,
): Promise<VariableWriteResult> {
  const { op, namespace, path } = write;
  const setting = op === "set" || op === "cas";
  const allows = (capability: "read" | "write" | "destroy") =>
    allowsVariable(ctx.config.aclEnabled, identity, namespace, path, capability, false);
  if (!allows(setting ? "write" : "destroy")) throw ApiError.forbidden();
  const canRead = allows("read");

  if (setting) {
    const invalid = variableError({ Namespace: namespace, Path: path, Items: write.items ?? {} });
    if (invalid) throw ApiError.badRequest(invalid);
  } else if (path === "") {
    throw ApiError.badRequest("delete requires a Path");
  } else if (namespace === "*") {
    // Nomad deletes nothing there and answers 204; nothing can live there, so it is refused unwritten.
    throw ApiError.badRequest('can not target wildcard ("*")namespace');
  }

  const key = variableKey(namespace, path);
  const before = ctx.tables.variables.get(key);
  const cas = write.cas ?? 0;
  if ((op === "cas" || op === "delete-cas") && casConflict(cas, before, namespace, path)) {
    return conflictResult(ctx, before, namespace, path, canRead);
  }

  const now = ctx.clock.now() * 1e6;
  let data: VariableApplied;
  if (setting) {
    let sealed: { Data: string; KeyID: string };
    try {
      sealed = encryptWithActiveKey(ctx.keyring, ctx.tables.rootKeys, write.items!);
    } catch (err) {
      return asApiError(err);
    }
    data = {
      Op: op,
      Namespace: namespace,
      Path: path,
      Var: { Namespace: namespace, Path: path, ...sealed, CreateTime: now, ModifyTime: now },
      ...(op === "cas" ? { CasIndex: cas } : {}),
    };
  } else {
    data = {
      Op: op,
      Namespace: namespace,
      Path: path,
      Var: null,
      ...(op === "delete-cas" ? { CasIndex: cas } : {}),
    };
  }

  let index: number;
  try {
    index = await commit(ctx, identity, [{ type: "VariableApplied", v: 1, data }]);
  } catch (err) {
    if (err instanceof ApiError && err.status === 409 && err.message.startsWith(CAS_ERROR)) {
      return conflictResult(ctx, ctx.tables.variables.get(key), namespace, path, canRead);
    }
    throw err;
  }
  if (!setting) return { kind: "ok", index, output: null };
  // The writer may read its own write (Nomad's Output carries the request's items).
  const written = ctx.tables.variables.get(key);
  const meta =
    written?.ModifyIndex === index
      ? written
      : // Changed again already: the metadata as this write left it.
        {
          Namespace: namespace,
          Path: path,
          CreateIndex: before?.CreateIndex ?? index,
          CreateTime: before?.CreateTime ?? now,
          ModifyIndex: index,
          ModifyTime: now,
        };
  return { kind: "ok", index, output: decryptedView(meta, write.items!) };
}

function conflictResult(
  ctx: ApiContext,
  row: VariableRow | undefined,
  namespace: string,
  path: string,
  canRead: boolean,
): VariableWriteResult {
  const conflict = !row
    ? absentVariable(namespace, path)
    : decryptedView(row, canRead ? openVariable(ctx, row) : null);
  return { kind: "conflict", conflict, index: conflict.ModifyIndex };
}
