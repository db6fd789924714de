import { TOPIC_COLUMNS } from "../../src/export/export-row.ts";

export type ExportedRow = Readonly<Record<string, unknown>>;

/** A consumer's copy of the cluster's tables, built by applying export rows in order and nothing else. */
export class Mirror {
  /** Topic -> `Namespace/Key` -> the latest row. */
  readonly tables = new Map<string, Map<string, ExportedRow>>();

  static of(rows: Iterable<ExportedRow>, atIndex = Number.POSITIVE_INFINITY): Mirror {
    const mirror = new Mirror();
    for (const row of rows) if ((row.Index as number) <= atIndex) mirror.apply(row);
    return mirror;
  }

  apply(row: ExportedRow): void {
    const topic = String(row.Topic);
    const table = this.tables.get(topic) ?? new Map<string, ExportedRow>();
    this.tables.set(topic, table);
    const key = `${row.Namespace}/${row.Key}`;
    if (row.Op === "delete") table.delete(key);
    else table.set(key, row);
  }
}

/** The list route whose rows a mirrored topic must equal. */
export const LIST_ROUTES: Readonly<Record<string, string>> = {
  Job: "/v1/jobs?namespace=*",
  Allocation: "/v1/allocations?namespace=*",
  Node: "/v1/nodes",
  Evaluation: "/v1/evaluations?namespace=*",
};

/**
 * How `mirror` differs from what the server's list routes answer (at
 * `atIndex`, when given): objects missing on either side, and each column
 * the API row also shows with another value. Empty when they are equal.
 */
export async function differences(server: string, mirror: Mirror, atIndex?: number): Promise<string[]> {
  const diffs: string[] = [];
  for (const [topic, route] of Object.entries(LIST_ROUTES)) {
    const url = `${server}${route}${atIndex === undefined ? "" : `&at_index=${atIndex}`}`.replace(
      "/v1/nodes&",
      "/v1/nodes?",
    );
    const res = await fetch(url);
    if (!res.ok) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);
    const api = new Map<string, Record<string, unknown>>();
    for (const row of (await res.json()) as Record<string, unknown>[]) {
      api.set(`${topic === "Node" ? "" : row.Namespace}/${row.ID}`, row);
    }
    const mine = mirror.tables.get(topic) ?? new Map<string, ExportedRow>();
    const at = atIndex === undefined ? "" : ` at ${atIndex}`;
    for (const key of api.keys())
      if (!mine.has(key)) diffs.push(`${topic} ${key}${at}: listed, not mirrored`);
    for (const [key, row] of mine) {
      const listed = api.get(key);
      if (!listed) {
        diffs.push(`${topic} ${key}${at}: mirrored (last ${row.EventType} at ${row.Index}), not listed`);
        continue;
      }
      for (const [column, path] of Object.entries(TOPIC_COLUMNS[topic] ?? {})) {
        if (path.includes(".") || !Object.hasOwn(listed, path)) continue;
        const value = listed[path];
        if (typeof value === "object" && value !== null) continue;
        if ((value ?? null) !== (row[column] ?? null)) {
          diffs.push(
            `${topic} ${key}${at}: ${column} is ${JSON.stringify(row[column])}, listed ${JSON.stringify(value)}`,
          );
        }
      }
    }
  }
  return diffs;
}
