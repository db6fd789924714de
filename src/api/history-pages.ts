import type { HistoryEntry } from "../../projections/history.ts";
import { type ListQuery, type Page, paginateInSlices, type Tokenizer } from "../query/paginator.ts";

/**
 * Where an entry of one object's history stands: its Index, then `n`, how
 * many entries of that index come before it (one record may change several
 * fields of an object at once). An object's entries only ever grow at their
 * end, so a position names the same entry for as long as the history exists.
 */
export interface EntryKey {
  readonly index: number;
  readonly n: number;
}

/** `<Index>.<n>` as X-Nomad-NextToken gives it, or a bare `<Index>` for the first entry of that index. */
export function parseEntryToken(token: string): EntryKey | undefined {
  const m = /^([0-9]+)(?:\.([0-9]+))?$/.exec(token);
  if (m === null) return undefined;
  // Numbers beyond 2^53 cannot be indexes; they still parse, as "after every entry".
  return { index: Number(m[1]), n: Number(m[2] ?? "0") };
}

/**
 * One page of `entries` (one object's history, in log order) with the
 * list's paging, direction and filter. The entries array is never changed
 * in place (a new entry makes a new array), so the walk may yield over it.
 */
export function pageOfEntries(
  entries: readonly HistoryEntry[],
  list: ListQuery,
): Promise<Page<HistoryEntry>> {
  const tokenizer = entryTokenizer(entries);
  const seek = (key: EntryKey): Iterable<HistoryEntry> => {
    const start = firstAtOrAfter(entries, key.index);
    const end = firstAtOrAfter(entries, key.index + 1);
    const at = Math.min(start + key.n, end);
    return list.reverse ? downFrom(entries, Math.min(at, entries.length - 1)) : upFrom(entries, at);
  };
  return paginateInSlices(list.reverse ? downFrom(entries, entries.length - 1) : entries, {
    perPage: list.perPage,
    nextToken: list.nextToken,
    reverse: list.reverse,
    filter: list.filter,
    tokenizer,
    seek,
  });
}

function entryTokenizer(entries: readonly HistoryEntry[]): Tokenizer<HistoryEntry, EntryKey> {
  // Tokens are made once per page and compared only near the token (the walk seeks to it).
  const nOf = (entry: HistoryEntry): number => {
    const start = firstAtOrAfter(entries, entry.Index);
    for (let i = start; i < entries.length && entries[i]!.Index === entry.Index; i++) {
      if (entries[i] === entry) return i - start;
    }
    throw new Error(`history entry at index ${entry.Index} is not in the list being paged`);
  };
  return {
    token: (entry) => `${entry.Index}.${nOf(entry)}`,
    parse: parseEntryToken,
    compare: (entry, key) =>
      entry.Index !== key.index ? (entry.Index < key.index ? -1 : 1) : nOf(entry) - key.n,
  };
}

/** The position of the first entry whose Index is `index` or more (binary search: entries are in Index order). */
function firstAtOrAfter(entries: readonly HistoryEntry[], index: number): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (entries[mid]!.Index < index) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function* upFrom(entries: readonly HistoryEntry[], from: number): Generator<HistoryEntry> {
  for (let i = from; i < entries.length; i++) yield entries[i]!;
}

function* downFrom(entries: readonly HistoryEntry[], from: number): Generator<HistoryEntry> {
  for (let i = from; i >= 0; i--) yield entries[i]!;
}
