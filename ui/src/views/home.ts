import { isAbort, messageOf, postJson } from "../api.ts";
import { h, link } from "../dom.ts";
import { routeHash, timelineHash } from "../router.ts";
import { focusHeading, setViewState, showError } from "../view-state.ts";

/** The search context of Nomad's `/v1/search` for each timeline kind. */
const SEARCH_CONTEXT: Readonly<Record<string, string>> = {
  allocation: "allocs",
  node: "nodes",
  job: "jobs",
  evaluation: "evals",
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface SearchAnswer {
  readonly Matches: Readonly<Record<string, readonly string[] | null>>;
  readonly Truncations: Readonly<Record<string, boolean>>;
}

/** `#/`: open a timeline by kind and ID (or an ID prefix), and links to the other views. */
export function homeView(main: HTMLElement, signal: AbortSignal): void {
  const heading = h("h2", { tabindex: "-1" }, "History explorer");
  main.replaceChildren(
    heading,
    h(
      "p",
      {},
      "What happened to an allocation, a node, a job or an evaluation, and what the cluster looked like at any index of its log.",
    ),
    h(
      "section",
      { "aria-labelledby": "open-heading" },
      h("h3", { id: "open-heading" }, "Open a timeline"),
      openTimelineForm(main, signal),
    ),
    h(
      "section",
      { "aria-labelledby": "views-heading" },
      h("h3", { id: "views-heading" }, "Views"),
      h(
        "ul",
        { class: "views" },
        h(
          "li",
          {},
          link(routeHash("cluster"), "Cluster at index"),
          ": jobs, nodes and allocations as they were at an index.",
        ),
        h(
          "li",
          {},
          link(routeHash("diff"), "Diff"),
          ": what was created, changed and removed between two indexes.",
        ),
        h("li", {}, link(routeHash("live"), "Live"), ": the event stream as it happens."),
      ),
    ),
  );
  setViewState(main, "loaded");
  focusHeading(heading);
}

/** Kind, ID (or prefix: matches are listed) and namespace; opens `#/timeline/<kind>/<id>`. */
export function openTimelineForm(main: HTMLElement, signal: AbortSignal): HTMLElement {
  const kind = h(
    "select",
    { id: "timeline-kind" },
    ["allocation", "node", "job", "evaluation", "token"].map((k) => h("option", { value: k }, k)),
  );
  const id = h("input", {
    id: "timeline-id",
    type: "search",
    required: true,
    autocomplete: "off",
    placeholder: "an ID, or its first characters",
  });
  const namespace = h("input", { id: "timeline-namespace", type: "text", placeholder: "default" });
  const results = h("div", { "aria-live": "polite" });
  const form = h(
    "form",
    { class: "open-timeline", role: "search" },
    h("label", { for: "timeline-kind" }, "Kind"),
    kind,
    h("label", { for: "timeline-id" }, "ID"),
    id,
    h("label", { for: "timeline-namespace" }, "Namespace (jobs)"),
    namespace,
    h("button", { type: "submit" }, "Open timeline"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    open(kind.value, id.value.trim(), namespace.value.trim(), results, main, signal);
  });
  return h("div", {}, form, results);
}

function open(
  kind: string,
  id: string,
  namespace: string,
  results: HTMLElement,
  main: HTMLElement,
  signal: AbortSignal,
): void {
  const target = (match: string) =>
    kind === "job" && namespace !== ""
      ? `${timelineHash(kind, match)}?namespace=${encodeURIComponent(namespace)}`
      : timelineHash(kind, match);
  const context = SEARCH_CONTEXT[kind];
  // A full ID, a job name, or a kind without prefix search opens directly.
  if (!context || UUID.test(id)) {
    location.hash = target(id);
    return;
  }
  setViewState(main, "loading", "Searching…");
  postJson<SearchAnswer>(
    `/v1/search${namespace === "" ? "" : `?namespace=${encodeURIComponent(namespace)}`}`,
    { Prefix: id, Context: context },
    signal,
  )
    .then((answer) => {
      const matches = answer.body.Matches[context] ?? [];
      if (matches.length === 1 || (kind === "job" && matches.includes(id))) {
        location.hash = target(matches.length === 1 ? matches[0]! : id);
        return;
      }
      results.replaceChildren(
        matches.length === 0
          ? h("p", {}, `No ${kind} ID starts with "${id}". `, link(target(id), "Open it anyway"))
          : h(
              "div",
              {},
              h("p", {}, `${matches.length}${answer.body.Truncations[context] ? "+" : ""} matches:`),
              h(
                "ul",
                {},
                matches.map((m) => h("li", {}, link(target(m), m))),
              ),
            ),
      );
      setViewState(main, "loaded", `${matches.length} matches`);
    })
    .catch((err: unknown) => {
      if (!isAbort(err)) showError(main, results, messageOf(err));
    });
}
