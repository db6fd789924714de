import { ApiError, getJson, isAbort, messageOf } from "../api.ts";
import { h, link } from "../dom.ts";
import { routeHash } from "../router.ts";
import type { HistoryEntry } from "../types.ts";
import { focusHeading, setViewState, showError } from "../view-state.ts";
import { openTimelineForm } from "./home.ts";
import { jobStatusChart } from "./job-status-chart.ts";
import { transitionItem } from "./transition-item.ts";

/** Transitions per page: small enough that a long-lived allocation never builds a giant list at once. */
const PER_PAGE = 100;

/** The history route of each kind a timeline opens on (src/api/plugins/history.ts). */
const HISTORY_PATHS: Readonly<Record<string, (id: string) => string>> = {
  allocation: (id) => `/v1/allocation/${encodeURIComponent(id)}/history`,
  node: (id) => `/v1/node/${encodeURIComponent(id)}/history`,
  job: (id) => `/v1/job/${encodeURIComponent(id)}/history`,
  evaluation: (id) => `/v1/evaluation/${encodeURIComponent(id)}/history`,
  token: (id) => `/v1/acl/token/${encodeURIComponent(id)}/history`,
};

const TITLES: Readonly<Record<string, string>> = {
  allocation: "Allocation",
  node: "Node",
  job: "Job",
  evaluation: "Evaluation",
  token: "ACL token",
};

/**
 * `#/timeline/<kind>/<id>[?namespace=&per_page=&order=newest]`: every transition of one object in
 * log order, a page at a time ("Load more" follows X-Nomad-NextToken).
 */
export async function timelineView(
  main: HTMLElement,
  path: readonly string[],
  query: URLSearchParams,
  signal: AbortSignal,
): Promise<void> {
  const [kind = "", id = ""] = path;
  const historyPath = HISTORY_PATHS[kind];
  const heading = h("h2", { tabindex: "-1" }, `${TITLES[kind] ?? kind} `, h("code", {}, id));
  const body = h("div");
  main.replaceChildren(heading, body);
  if (kind === "" && id === "") {
    heading.textContent = "Timeline";
    body.append(openTimelineForm(main, signal));
    setViewState(main, "loaded");
    focusHeading(heading);
    return;
  }
  if (!historyPath || id === "") {
    showError(
      main,
      body,
      `Nothing to show: a timeline is #/timeline/<${Object.keys(HISTORY_PATHS).join("|")}>/<id>.`,
    );
    return;
  }
  const namespace = query.get("namespace") ?? undefined;
  const asked = Number(query.get("per_page"));
  const perPage = Number.isSafeInteger(asked) && asked > 0 ? Math.min(asked, 1000) : PER_PAGE;
  // A long-lived node's timeline is long: its latest transitions are often the question.
  const newestFirst = query.get("order") === "newest";
  const filter = query.get("filter") ?? "";
  main.replaceChildren(heading, filterForm(kind, id, query), body);
  const list = h("ol", {
    "data-testid": "timeline",
    class: "timeline",
    "aria-label": `Transitions, ${newestFirst ? "newest" : "oldest"} first`,
  });
  const more = h("button", { type: "button", class: "more", hidden: true }, "Load more");
  const count = h("p", { class: "count", "aria-live": "polite" });
  const chartSlot = h("div", { class: "chart-slot" });
  const problem = h("div");
  let nextToken = "";
  let shown = 0;

  const loadPage = async () => {
    more.disabled = true;
    problem.replaceChildren();
    setViewState(main, "loading");
    const page = await getJson<HistoryEntry[]>(
      historyPath(id),
      {
        per_page: perPage,
        next_token: nextToken,
        namespace,
        filter,
        reverse: newestFirst ? "true" : undefined,
      },
      signal,
    );
    const items = page.body.map(transitionItem);
    list.append(...items);
    shown += items.length;
    nextToken = page.nextToken;
    more.hidden = nextToken === "";
    more.disabled = false;
    count.textContent = `${shown} transition${shown === 1 ? "" : "s"}${nextToken === "" ? "" : ", more to load"}`;
    setViewState(main, "loaded", `${items.length} transitions loaded`);
    return items;
  };

  more.addEventListener("click", () => {
    loadPage()
      .then((items) => items[0]?.querySelector("a")?.focus())
      .catch((err: unknown) => {
        if (isAbort(err)) return;
        more.disabled = false;
        showError(main, problem, messageOf(err));
      });
  });

  try {
    await loadPage();
  } catch (err) {
    if (isAbort(err)) return;
    const message =
      err instanceof ApiError && err.status === 404
        ? `No history for ${kind} ${id}: check the ID (a full ID; use the home page to search by prefix)${kind === "job" ? " and the namespace" : ""}.`
        : messageOf(err);
    showError(main, body, message);
    return;
  }
  body.replaceChildren(
    h(
      "p",
      { class: "hint" },
      `Every transition in log order, ${newestFirst ? "newest" : "oldest"} first. The index links to the cluster as it was then; causes and actors link to what is behind them. `,
      link(orderHash(kind, id, query, !newestFirst), newestFirst ? "Oldest first" : "Newest first"),
      " · ",
      link(routeHash("cluster"), "Cluster now"),
    ),
    chartSlot,
    count,
    list,
    problem,
    more,
  );
  if (kind === "job") jobStatusChart(chartSlot, id, namespace, signal);
  focusHeading(heading);
}

/** This timeline in the other order, its other parameters kept. */
function orderHash(kind: string, id: string, query: URLSearchParams, newestFirst: boolean): string {
  return withParam(kind, id, query, "order", newestFirst ? "newest" : "");
}

function withParam(kind: string, id: string, query: URLSearchParams, name: string, value: string): string {
  const params: Record<string, string> = Object.fromEntries(query);
  if (value === "") delete params[name];
  else params[name] = value;
  return routeHash("timeline", [kind, id], params);
}

/** Task events are most of a running allocation's entries; hiding them leaves its state changes. */
const WITHOUT_TASK_EVENTS = 'Field != "TaskEvents"';

/**
 * The API's `filter` (a bexpr over an entry's fields), kept in the URL so a
 * filtered timeline can be shared; a bad expression is the server's 400, shown.
 */
function filterForm(kind: string, id: string, query: URLSearchParams): HTMLFormElement {
  const current = query.get("filter") ?? "";
  const input = h("input", {
    id: "timeline-filter",
    type: "text",
    value: current,
    placeholder: 'Field == "ClientStatus"',
    "aria-describedby": "timeline-filter-help",
  });
  const hideTasks = h("input", {
    id: "timeline-hide-tasks",
    type: "checkbox",
    checked: current === WITHOUT_TASK_EVENTS,
  });
  const form = h(
    "form",
    { class: "timeline-filter" },
    h("label", { for: "timeline-filter" }, "Filter"),
    input,
    h("button", { type: "submit" }, "Apply"),
    hideTasks,
    h("label", { for: "timeline-hide-tasks" }, "Hide task events"),
    h(
      "p",
      { id: "timeline-filter-help", class: "hint" },
      "A filter expression over Index, Time, Field, From, To, Cause.* and Actor.*; compare From/To after the Field, as in ",
      h("code", {}, 'Field == "ClientStatus" and To == "failed"'),
      ".",
    ),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = withParam(kind, id, query, "filter", input.value.trim());
  });
  hideTasks.addEventListener("change", () => {
    location.hash = withParam(kind, id, query, "filter", hideTasks.checked ? WITHOUT_TASK_EVENTS : "");
  });
  return form;
}
