import { isAbort, messageOf } from "../api.ts";
import { h, link, shortId } from "../dom.ts";
import { replaceHash, routeHash, timelineHash } from "../router.ts";
import { latestIndex, loadSnapshot, TABLES } from "../snapshot.ts";
import { diffRows, type RowChange } from "../snapshot-diff.ts";
import { focusHeading, setViewState, showError } from "../view-state.ts";
import { MAX_ROWS } from "./cluster-tables.ts";

/**
 * `#/diff?from=A&to=B`: what was created, changed (which fields) and removed
 * between two indexes, per table, from two `?at_index` reads.
 */
export async function diffView(
  main: HTMLElement,
  query: URLSearchParams,
  signal: AbortSignal,
): Promise<void> {
  const heading = h("h2", { tabindex: "-1" }, "Diff between two indexes");
  const from = h("input", {
    id: "diff-from",
    type: "number",
    min: 1,
    required: true,
    value: query.get("from") ?? "",
  });
  const to = h("input", {
    id: "diff-to",
    type: "number",
    min: 1,
    required: true,
    value: query.get("to") ?? "",
  });
  const form = h(
    "form",
    { class: "diff-controls" },
    h("label", { for: "diff-from" }, "From index"),
    from,
    h("label", { for: "diff-to" }, "To index"),
    to,
    h("button", { type: "submit" }, "Compare"),
  );
  const body = h("div");
  main.replaceChildren(heading, form, body);

  let loading: AbortController | undefined;
  const compare = async (a: number, b: number) => {
    loading?.abort();
    const mine = new AbortController();
    loading = mine;
    signal.addEventListener("abort", () => mine.abort(), { once: true });
    replaceHash(routeHash("diff", [], { from: String(a), to: String(b) }));
    setViewState(main, "loading", `Comparing index ${a} with ${b}…`);
    try {
      const [before, after] = await Promise.all([loadSnapshot(a, mine.signal), loadSnapshot(b, mine.signal)]);
      body.replaceChildren(
        h(
          "p",
          { class: "hint" },
          "From ",
          link(routeHash("cluster", [], { index: String(a) }), `the cluster at #${a}`),
          " to ",
          link(routeHash("cluster", [], { index: String(b) }), `the cluster at #${b}`),
          ".",
        ),
        ...TABLES.map((spec) =>
          tableSection(
            spec.name,
            spec.title,
            spec.kind,
            diffRows(before.tables[spec.name], after.tables[spec.name]),
          ),
        ),
      );
      setViewState(main, "loaded", `Compared index ${a} with ${b}`);
    } catch (err) {
      if (!isAbort(err) && loading === mine) showError(main, body, messageOf(err));
    }
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const a = Number(from.value);
    const b = Number(to.value);
    if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b) || a < 1 || b < 1) {
      showError(main, body, "Type two indexes, each 1 or more.");
      return;
    }
    void compare(a, b);
  });

  const a = Number(query.get("from"));
  const b = Number(query.get("to"));
  if (a > 0 && b > 0) {
    await compare(a, b);
  } else {
    // Without indexes: offer the last step of the log, a common question ("what did the last write do").
    try {
      const latest = await latestIndex(signal);
      from.value = String(Math.max(1, latest - 10));
      to.value = String(latest);
      body.replaceChildren(h("p", { class: "hint" }, "Choose two indexes and Compare."));
      setViewState(main, "loaded");
    } catch (err) {
      if (!isAbort(err)) showError(main, body, messageOf(err));
    }
  }
  focusHeading(heading);
}

const WORDS = { created: "created", changed: "changed", removed: "removed" };

function tableSection(name: string, title: string, kind: string, changes: readonly RowChange[]): HTMLElement {
  const shown = changes.slice(0, MAX_ROWS);
  const counts = { created: 0, changed: 0, removed: 0 };
  for (const c of changes) counts[c.kind]++;
  return h(
    "section",
    { "data-table": name, class: "diff-table" },
    h("h3", {}, `${title}: ${counts.created} created, ${counts.changed} changed, ${counts.removed} removed`),
    changes.length === 0
      ? h("p", { class: "empty" }, "no difference")
      : h(
          "ul",
          {},
          shown.map((c) =>
            h(
              "li",
              { "data-change": c.kind, "data-id": c.row.id, class: `change-${c.kind}` },
              h("span", { class: "badge" }, WORDS[c.kind]),
              " ",
              link(
                kind === "job"
                  ? `${timelineHash(kind, c.row.id)}?namespace=${encodeURIComponent(c.row.namespace)}`
                  : timelineHash(kind, c.row.id),
                shortId(c.row.id),
                { title: c.row.id },
              ),
              c.kind === "changed"
                ? h(
                    "ul",
                    { class: "fields" },
                    c.fields.map((f) =>
                      h(
                        "li",
                        { "data-field": f.name },
                        h("code", {}, f.name),
                        `: ${f.from || "—"} → ${f.to || "—"}`,
                      ),
                    ),
                  )
                : null,
            ),
          ),
          changes.length > shown.length ? h("li", {}, `… and ${changes.length - shown.length} more`) : null,
        ),
  );
}
