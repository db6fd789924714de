import type { EvaluationRow } from "../../projections/evals.ts";
import type { Filter } from "../query/filter/index.ts";
import { FilterError } from "../query/filter/index.ts";
import {
  type CreateIndexKey,
  compareCodePoints,
  type ListQuery,
  type Page,
  seekRow,
} from "../query/paginator.ts";
import { skipWhile, walkInSlices } from "../query/sliced-walk.ts";
import { byCreateIndexThenId, type Table } from "../store/table.ts";
import { ALL_NAMESPACES, type CreationOrder, pageByCreation, tableCreationOrder } from "./list-pages.ts";

/**
 * A namespace holding less than this share of all evaluations is listed from
 * its own index (sorted once per table change) instead of by walking the
 * whole table and skipping other namespaces.
 */
const SMALL_NAMESPACE_SHARE = 8;

export interface EvalListParams {
  readonly namespace: string;
  readonly prefix: string;
  /** Nomad's legacy `status` and `job` parameters: exact matches applied before paging. */
  readonly status: string;
  readonly job: string;
  readonly list: ListQuery;
  /** The caller's namespace check (Nomad's read-job per namespace). */
  readonly allowNamespace: (namespace: string) => boolean;
}

/**
 * One page of Eval.List (see pageByCreation). Nomad's legacy `status` and
 * `job` parameters are exact matches applied before paging; a namespace is
 * read from its own index when it holds a small share of all evaluations.
 */
export function listEvals(evals: Table<EvaluationRow>, params: EvalListParams): Promise<Page<EvaluationRow>> {
  const { namespace, prefix, status, job, list } = params;
  const allow = (row: EvaluationRow) =>
    (namespace === ALL_NAMESPACES || row.Namespace === namespace) &&
    (status === "" || row.Status === status) &&
    (job === "" || row.JobID === job) &&
    params.allowNamespace(row.Namespace);
  return pageByCreation(evals, { prefix, list, allow, ordered: namespaceOrder(evals, namespace) });
}

/** Rows of `namespace` (or all) in (CreateIndex, ID) order, cheaply for large and small namespaces alike. */
function namespaceOrder(evals: Table<EvaluationRow>, namespace: string): CreationOrder<EvaluationRow> {
  const whole = tableCreationOrder(evals);
  if (namespace === ALL_NAMESPACES) return whole;
  const size = evals.countBy("namespace", namespace);
  if (size * SMALL_NAMESPACE_SHARE >= evals.size) return whole;
  const rows = namespaceSorted(evals, namespace);
  return (from, reverse) => sliceFrom(rows, from, reverse);
}

interface SortedNamespace {
  readonly index: number;
  readonly rows: readonly EvaluationRow[];
}

/** Per table, per namespace: the namespace's rows sorted as of the table's index. */
const sortedCache = new WeakMap<Table<EvaluationRow>, Map<string, SortedNamespace>>();

function namespaceSorted(evals: Table<EvaluationRow>, namespace: string): readonly EvaluationRow[] {
  let byNamespace = sortedCache.get(evals);
  if (!byNamespace) {
    byNamespace = new Map();
    sortedCache.set(evals, byNamespace);
  }
  const cached = byNamespace.get(namespace);
  if (cached?.index === evals.index) return cached.rows;
  const rows = evals.by("namespace", namespace).sort(byCreateIndexThenId);
  // A page walk re-reads the same namespace; older namespaces' sorts are stale by now.
  byNamespace.clear();
  byNamespace.set(namespace, { index: evals.index, rows });
  return rows;
}

function* sliceFrom(
  rows: readonly EvaluationRow[],
  from: CreateIndexKey | undefined,
  reverse: boolean,
): Generator<EvaluationRow> {
  if (!reverse) {
    for (let i = from ? lowerBound(rows, seekRow<EvaluationRow>(from)) : 0; i < rows.length; i++)
      yield rows[i]!;
    return;
  }
  for (let i = (from ? upperBound(rows, seekRow<EvaluationRow>(from)) : rows.length) - 1; i >= 0; i--)
    yield rows[i]!;
}

function lowerBound(rows: readonly EvaluationRow[], key: EvaluationRow): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (byCreateIndexThenId(rows[mid]!, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function upperBound(rows: readonly EvaluationRow[], key: EvaluationRow): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (byCreateIndexThenId(rows[mid]!, key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export interface EvalCountParams {
  readonly namespace: string;
  readonly prefix: string;
  readonly filter: Filter | undefined;
  readonly allowNamespace: (namespace: string) => boolean;
  /** Every namespace the caller may read: counts without a filter need no walk then. */
  readonly allowsEveryNamespace: boolean;
}

/**
 * Eval.Count: like Eval.List without paging; a row the filter fails on is not
 * counted (Nomad). Walks in slices (see walkInSlices), since a filtered count
 * reads the whole table.
 */
export async function countEvals(evals: Table<EvaluationRow>, params: EvalCountParams): Promise<number> {
  const { namespace, prefix, filter } = params;
  if (prefix === "" && filter === undefined) {
    if (namespace === ALL_NAMESPACES && params.allowsEveryNamespace) return evals.size;
    if (namespace !== ALL_NAMESPACES) {
      return params.allowNamespace(namespace) ? evals.countBy("namespace", namespace) : 0;
    }
  }
  let rows: Iterable<EvaluationRow>;
  let resume: ((after: EvaluationRow) => Iterable<EvaluationRow>) | undefined;
  if (prefix !== "") {
    rows = evals.withPrefix(prefix);
    resume = (after) =>
      skipWhile(evals.withPrefix(prefix, after.ID), (row) => compareCodePoints(row.ID, after.ID) <= 0);
  } else if (
    namespace !== ALL_NAMESPACES &&
    evals.countBy("namespace", namespace) * SMALL_NAMESPACE_SHARE < evals.size
  ) {
    rows = evals.by("namespace", namespace); // a copy: safe across yields
  } else {
    rows = evals.list(); // the rows themselves, without a key lookup each as all() does
    resume = (after) => skipWhile(evals.list(after), (row) => byCreateIndexThenId(row, after) <= 0);
  }
  let count = 0;
  const visit = (row: EvaluationRow) => {
    if (namespace !== ALL_NAMESPACES && row.Namespace !== namespace) return true;
    if (!params.allowNamespace(row.Namespace)) return true;
    if (filter !== undefined && !matchesOrSkips(filter, row)) return true;
    count++;
    return true;
  };
  await walkInSlices(rows, visit, resume);
  return count;
}

function matchesOrSkips(filter: Filter, row: EvaluationRow): boolean {
  try {
    return filter.matches(row);
  } catch (err) {
    if (err instanceof FilterError) return false;
    throw err;
  }
}

/** Nomad's EvaluationStub: what `?related=true` lists. */
export interface EvaluationStub {
  readonly ID: string;
  readonly Namespace: string;
  readonly Priority: number;
  readonly Type: string;
  readonly TriggeredBy: string;
  readonly JobID: string;
  readonly NodeID: string;
  readonly DeploymentID: string;
  readonly Status: string;
  readonly StatusDescription: string;
  readonly WaitUntil: string;
  readonly NextEval: string;
  readonly PreviousEval: string;
  readonly BlockedEval: string;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
  readonly CreateTime: number;
  readonly ModifyTime: number;
}

export function evaluationStub(e: EvaluationRow): EvaluationStub {
  return {
    ID: e.ID,
    Namespace: e.Namespace,
    Priority: e.Priority,
    Type: e.Type,
    TriggeredBy: e.TriggeredBy,
    JobID: e.JobID,
    NodeID: e.NodeID,
    DeploymentID: e.DeploymentID,
    Status: e.Status,
    StatusDescription: e.StatusDescription,
    WaitUntil: e.WaitUntil,
    NextEval: e.NextEval,
    PreviousEval: e.PreviousEval,
    BlockedEval: e.BlockedEval,
    CreateIndex: e.CreateIndex,
    ModifyIndex: e.ModifyIndex,
    CreateTime: e.CreateTime,
    ModifyTime: e.ModifyTime,
  };
}

/**
 * Nomad's EvalsRelatedToID: every evaluation reachable through NextEval,
 * PreviousEval and BlockedEval links, breadth first, without the eval itself.
 */
export function relatedEvals(evals: Table<EvaluationRow>, start: EvaluationRow): EvaluationStub[] {
  const related: EvaluationStub[] = [];
  const done = new Set([start.ID]);
  const todo = relatedIDs(start);
  for (let i = 0; i < todo.length; i++) {
    const id = todo[i]!;
    if (done.has(id)) continue;
    const e = evals.get(id);
    if (!e) continue;
    done.add(id);
    related.push(evaluationStub(e));
    todo.push(...relatedIDs(e));
  }
  return related;
}

function relatedIDs(e: EvaluationRow): string[] {
  return [e.NextEval, e.PreviousEval, e.BlockedEval].filter((id) => id !== "");
}
