import { h, link, shortId } from "../dom.ts";
import { routeHash, timelineHash } from "../router.ts";
import { type Snapshot, type SnapshotRow, TABLES } from "../snapshot.ts";

/** Rows drawn per table: a large cluster's view stays a page, not a giant DOM. */
export const MAX_ROWS = 500;

/** Cells that name another object link to its timeline. */
const LINKED: Readonly<Record<string, string>> = { JobID: "job", NodeID: "node" };

/** The three tables of a snapshot: `table[data-table]` with `tr[data-id]` and `td[data-col]` (the contract's hooks). */
export function clusterTables(snapshot: Snapshot): HTMLElement[] {
  return TABLES.map((spec) => {
    const rows = snapshot.tables[spec.name];
    const shown = rows.slice(0, MAX_ROWS);
    const caption = `${spec.title} (${rows.length})${statusCounts(spec.name, rows)}${rows.length > shown.length ? `, the first ${shown.length} shown` : ""}`;
    return h(
      "section",
      { class: "table-section" },
      h(
        "table",
        { "data-table": spec.name },
        h("caption", {}, caption),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            spec.columns.map((c) => h("th", { scope: "col" }, c)),
          ),
        ),
        h(
          "tbody",
          {},
          shown.map((row) =>
            h(
              "tr",
              { "data-id": row.id },
              spec.columns.map((col) => h("td", { "data-col": col }, cellContent(spec.kind, col, row))),
            ),
          ),
          shown.length === 0
            ? h("tr", {}, h("td", { colspan: spec.columns.length, class: "empty" }, "none at this index"))
            : null,
        ),
      ),
    );
  });
}

/** The column whose values are counted in a table's caption ("3 running, 1 lost"). */
const COUNTED: Readonly<Record<string, string>> = {
  jobs: "Status",
  nodes: "Status",
  allocations: "ClientStatus",
};

function statusCounts(table: string, rows: readonly SnapshotRow[]): string {
  const column = COUNTED[table];
  if (!column || rows.length === 0) return "";
  const counts = new Map<string, number>();
  for (const row of rows) {
    const v = row.cells[column] ?? "";
    counts.set(v, (counts.get(v) ?? 0) + 1);
  }
  return `: ${[...counts].map(([v, n]) => `${n} ${v || "—"}`).join(", ")}`;
}

function cellContent(kind: string, col: string, row: SnapshotRow): Node | string {
  const value = row.cells[col] ?? "";
  if (value === "") return "—";
  if (col === "ID") {
    const hash =
      kind === "job"
        ? `${timelineHash(kind, value)}?namespace=${encodeURIComponent(row.namespace)}`
        : timelineHash(kind, value);
    return link(hash, shortId(value), { title: `Timeline of ${kind} ${value}` });
  }
  const linked = LINKED[col];
  if (linked) {
    const hash =
      linked === "job"
        ? `${timelineHash(linked, value)}?namespace=${encodeURIComponent(row.namespace)}`
        : timelineHash(linked, value);
    return link(hash, shortId(value), { title: `Timeline of ${linked} ${value}` });
  }
  return value;
}

export const clusterHash = (index: number) => routeHash("cluster", [], { index: String(index) });
