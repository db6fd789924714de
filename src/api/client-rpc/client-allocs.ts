import type { AllocRow } from "../../../projections/allocs.ts";
import { withSignedIdentities } from "../../identity/alloc-identities.ts";
import type { Watch } from "../../store/watches.ts";
import { ApiError } from "../api-error.ts";
import { MAX_WAIT_MS, runBlocking } from "../blocking-query.ts";
import { authenticateNode, authenticateNodeBySecret, presentedNodeSecret } from "./node-auth.ts";
import { blockingParams, queryMeta, type RpcHandler } from "./rpc-context.ts";
import type { ClientAllocsBody, GetAllocBody, GetAllocsBody } from "./schemas.ts";

/**
 * Node.GetClientAllocs: what the client should run, as allocation ID →
 * AllocModifyIndex (bumped by server-side changes only), blocking until the
 * index passes MinQueryIndex. An unknown node gets an empty map, as in Nomad.
 *
 * Unlike Nomad's, a blocked call is not woken when only its allocations'
 * ModifyIndex moved (the client's own status updates): Nomad's client would
 * compare the map, find nothing to pull and ask again at once. At 5,000
 * nodes that round trip came back after every batch of client updates, and
 * was most of the client calls the server answered during a placement burst.
 * Its wait running out, it answers with the latest index, as Nomad's does.
 */
export const getClientAllocs: RpcHandler = async ({ api }, request) => {
  const body = (request.body ?? {}) as ClientAllocsBody;
  if (!body.NodeID) throw ApiError.badRequest("missing node ID");
  if (api.tables.nodes.has(body.NodeID)) {
    authenticateNode(api, body.NodeID, presentedNodeSecret(request, body.SecretID, body.AuthToken));
  }
  const { allocs } = api.tables;
  let firstCount: number | undefined;
  // Woken by changes to this node's allocations only, as Nomad's watch set on
  // AllocsByNode, and only by those that change the map.
  const watch = [{ table: "allocs", index: "node", value: body.NodeID, changes: changesMap }];
  // A run reads the rows and their index only: the map is built from the
  // answering run's rows, not for each run that finds nothing new (a poll's
  // first run after its answer, most often).
  const result = await runBlocking(api, request, blockingParams(body, MAX_WAIT_MS), watch, () => {
    const rows = allocs.by("node", body.NodeID!);
    firstCount ??= rows.length;
    let max = 0;
    for (const a of rows) if (a.ModifyIndex > max) max = a.ModifyIndex;
    // No allocations, or fewer than before (garbage collected): the table's
    // index is the one that moved.
    const index = rows.length === 0 || rows.length < firstCount ? allocs.index : max;
    // Never 0, as Nomad's "must provide non-zero index to prevent blocking":
    // a client asking with MinQueryIndex 0 is answered at once, and would ask
    // again at once, for as long as no allocation was ever written.
    return { index: Math.max(index, 1), body: rows };
  });
  return { Allocs: allocModifyIndexes(result.body), MigrateTokens: {}, ...queryMeta(api, result.index) };
};

/**
 * Allocation ID → AllocModifyIndex. No prototype: a `{}` literal given UUID
 * keys makes a hidden class per key (a transition, a map allocated, each a
 * V8 internal lookup), about four times the cost of a dictionary object,
 * and it is never looked up, only encoded (JSON.stringify, msgpackr and
 * go-msgpack write it alike).
 */
function allocModifyIndexes(rows: readonly AllocRow[]): Record<string, number> {
  const out: Record<string, number> = Object.create(null);
  for (const a of rows) out[a.ID] = a.AllocModifyIndex;
  return out;
}

/** Whether a change of one of a node's allocations changes what GetClientAllocs answers: added, removed, moved or changed by the server. */
function changesMap(before: unknown, after: unknown): boolean {
  const b = before as AllocRow | undefined;
  const a = after as AllocRow | undefined;
  return !b || !a || b.AllocModifyIndex !== a.AllocModifyIndex || b.NodeID !== a.NodeID;
}

const NO_WATCHES: readonly Watch[] = [];

/**
 * Alloc.GetAllocs: full allocations by ID, for the client that pulls what
 * changed. Any authenticated node may read them (it watches the previous
 * allocations of its own, which may be elsewhere). While one is missing the
 * answer is empty and blocks, as Nomad's does. The caller's own allocations
 * carry SignedIdentities, made at read time (the log keeps none).
 */
export const getAllocs: RpcHandler = async ({ api }, request) => {
  const body = (request.body ?? {}) as GetAllocsBody;
  const { node } = authenticateNodeBySecret(api, presentedNodeSecret(request, body.AuthToken));
  const ids = body.AllocIDs ?? [];
  const { allocs } = api.tables;
  const params = blockingParams(body, MAX_WAIT_MS);
  // A call with no index to wait past is answered at once and arms no
  // watch: its array (an object per ID) is not made.
  const watch =
    params.minIndex <= 0
      ? NO_WATCHES
      : ids.length > 0
        ? ids.map((key) => ({ table: "allocs", key }))
        : ["allocs"];
  const result = await runBlocking(api, request, params, watch, () => {
    const found: AllocRow[] = [];
    let max = 0;
    for (const id of ids) {
      const a = allocs.get(id);
      if (!a) return { index: allocs.index, body: [] as AllocRow[] };
      found.push(a);
      if (a.ModifyIndex > max) max = a.ModifyIndex;
    }
    return { index: max > 0 ? max : allocs.index, body: found };
  });
  // Nomad's client takes its tasks' workload identities from here
  // (alloc.SignedIdentities): made for the caller's own allocations only.
  const allocsOut = await withSignedIdentities(api.keyring, result.body, node.ID, (alloc, err) =>
    api.logger.warn({ alloc: alloc.ID, key: err.keyId }, err.message),
  );
  return { Allocs: allocsOut, ...queryMeta(api, result.index) };
};

/**
 * Alloc.GetAlloc: one allocation by ID, for a client watching a previous
 * allocation on another node (its migration). Blocks by MinQueryIndex; an
 * unknown ID answers a nil Alloc, as Nomad's does.
 */
export const getAlloc: RpcHandler = async ({ api }, request) => {
  const body = (request.body ?? {}) as GetAllocBody;
  authenticateNodeBySecret(api, presentedNodeSecret(request, body.AuthToken));
  if (!body.AllocID) throw ApiError.badRequest("missing allocation ID");
  const id = body.AllocID;
  const { allocs } = api.tables;
  const result = await runBlocking(
    api,
    request,
    blockingParams(body, MAX_WAIT_MS),
    [{ table: "allocs", key: id }],
    () => {
      const a = allocs.get(id);
      return { index: a ? a.ModifyIndex : allocs.index, body: a ?? null };
    },
  );
  return { Alloc: result.body, ...queryMeta(api, result.index) };
};
