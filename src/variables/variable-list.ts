import { type VariableTable, variableKey } from "../../projections/variables.ts";
import {
  compareCodePoints,
  type ListQuery,
  type NamespaceKey,
  type Page,
  paginateInSlices,
  type Tokenizer,
} from "../query/paginator.ts";
import { listRow, type VariableListRow } from "./variable-views.ts";

/**
 * Nomad's StructsTokenizer WithNamespace and WithID for variables:
 * `Namespace.Path` (neither can hold a "."), in the (Namespace, Path)
 * order of the table's key.
 */
export const variableTokenizer: Tokenizer<VariableListRow, NamespaceKey> = {
  token: (row) => `${row.Namespace}.${row.Path}`,
  parse: (token) => {
    const dot = token.indexOf(".");
    return dot < 0
      ? { namespace: token, id: "" }
      : { namespace: token.slice(0, dot), id: token.slice(dot + 1) };
  },
  compare: (row, key) =>
    compareCodePoints(row.Namespace, key.namespace) || compareCodePoints(row.Path, key.id),
};

export interface VariableListParams {
  /** A namespace, or `*` for every one. */
  readonly namespace: string;
  /** `?prefix=`: a path prefix. */
  readonly prefix: string;
  readonly list: ListQuery;
  /** The per-path `list` check, before the filter, as Nomad's paginator runs it. */
  readonly allow: (row: VariableListRow) => boolean;
}

/**
 * One page of Variables.List: the variables of one namespace whose path has
 * the prefix (or of every namespace, with `*`), in (Namespace, Path) order,
 * as metadata plus KeyID (which `filter` may name; the answer drops it).
 * Read in slices, re-entering the table by key after each yield.
 */
export function pageOfVariables(
  table: VariableTable,
  { namespace, prefix, list, allow }: VariableListParams,
): Promise<Page<VariableListRow>> {
  const all = namespace === "*";
  const start = all ? "" : variableKey(namespace, prefix);
  function* rows(from?: string): Generator<VariableListRow> {
    for (const row of table.withPrefix(start, from)) {
      if (all && !row.Path.startsWith(prefix)) continue;
      yield listRow(row);
    }
  }
  const common = { perPage: list.perPage, nextToken: list.nextToken, filter: list.filter, allow };
  // The key order has no reverse walk; a reversed listing is read whole, then turned.
  if (list.reverse) {
    return paginateInSlices([...rows()].reverse(), {
      ...common,
      reverse: true,
      tokenizer: variableTokenizer,
    });
  }
  return paginateInSlices(rows(), {
    ...common,
    tokenizer: variableTokenizer,
    seek: (key) => rows(variableKey(key.namespace, key.id)),
  });
}
