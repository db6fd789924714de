import { isAbort, messageOf } from "../api.ts";
import { h, link } from "../dom.ts";
import { nextChangeAfter } from "../event-stream.ts";
import { replaceHash, routeHash } from "../router.ts";
import { latestIndex, loadSnapshot } from "../snapshot.ts";
import { focusHeading, setViewState, showError } from "../view-state.ts";
import { clusterHash, clusterTables } from "./cluster-tables.ts";

/** How long stepping forward waits for a later change before saying there is none yet. */
const NEXT_WAIT_MS = 3000;
/** Slider moves settle this long before a read, so dragging does not send one read per pixel. */
const SETTLE_MS = 200;

/**
 * `#/cluster?index=N`: jobs, nodes and allocations as they were at index N
 * (the latest without one), picked with a slider, typed, or stepped event by
 * event.
 */
export async function clusterView(
  main: HTMLElement,
  query: URLSearchParams,
  signal: AbortSignal,
): Promise<void> {
  const heading = h("h2", { tabindex: "-1" }, "Cluster at index");
  const body = h("div", { class: "tables" });
  main.replaceChildren(heading, body);
  setViewState(main, "loading");
  let latest: number;
  try {
    latest = await latestIndex(signal);
  } catch (err) {
    if (!isAbort(err)) showError(main, body, messageOf(err));
    return;
  }
  const asked = Number(query.get("index"));
  let current = Number.isSafeInteger(asked) && asked > 0 ? Math.min(asked, latest) : latest;

  const slider = h("input", {
    id: "index-slider",
    type: "range",
    min: 1,
    max: Math.max(1, latest),
    step: 1,
    value: current,
    "aria-describedby": "index-help",
  });
  const typed = h("input", {
    id: "index-input",
    type: "number",
    min: 1,
    max: Math.max(1, latest),
    value: current,
  });
  const back = h(
    "button",
    { id: "step-back", type: "button", title: "The previous index at which something changed" },
    "◀ Previous change",
  );
  const forward = h(
    "button",
    { id: "step-forward", type: "button", title: "The next index at which something changed" },
    "Next change ▶",
  );
  const toLatest = h("button", { type: "button" }, "Latest");
  const note = h("p", { class: "hint", "aria-live": "polite" });
  const controls = h(
    "form",
    { class: "index-controls", "aria-label": "Index" },
    h("label", { for: "index-slider" }, "Index"),
    slider,
    h("label", { for: "index-input", class: "visually-hidden" }, "Index (typed)"),
    typed,
    back,
    forward,
    toLatest,
    h(
      "p",
      { id: "index-help", class: "hint" },
      "Arrow keys move the slider by one index; Enter reads it. Previous/Next change jump to the indexes where jobs, nodes or allocations changed. ",
      link(
        routeHash("diff", [], { from: String(Math.max(1, current - 1)), to: String(current) }),
        "Diff with the index before",
      ),
    ),
  );
  const diffLink = controls.querySelector("a")!;

  let generation = 0;
  let loading: AbortController | undefined;
  const show = (index: number, snapshotIndex?: number) => {
    const mine = ++generation;
    loading?.abort();
    loading = new AbortController();
    const abortWith = () => loading?.abort();
    signal.addEventListener("abort", abortWith, { once: true });
    const own = loading.signal;
    setViewState(main, "loading", `Loading the cluster at index ${index}…`);
    loadSnapshot(snapshotIndex ?? index, own)
      .then((snapshot) => {
        if (mine !== generation) return;
        // Stepping back reads index-1 and shows it as of its last change (the same tables).
        const at = snapshotIndex === undefined ? index : Math.max(1, snapshot.lastChange);
        setIndex(at);
        body.replaceChildren(...clusterTables(snapshot));
        if (snapshot.versionsSkipped > 0)
          body.append(h("p", { class: "hint" }, `${snapshot.versionsSkipped} job versions not read.`));
        setViewState(main, "loaded", `Cluster at index ${at}`);
      })
      .catch((err: unknown) => {
        if (!isAbort(err) && mine === generation) showError(main, body, messageOf(err));
      })
      .finally(() => signal.removeEventListener("abort", abortWith));
  };
  const setIndex = (index: number) => {
    current = index;
    slider.value = String(index);
    slider.setAttribute("aria-valuetext", `index ${index} of ${latest}`);
    typed.value = String(index);
    heading.textContent = `Cluster at index ${index}${index === latest ? " (latest)" : ""}`;
    diffLink.href = routeHash("diff", [], { from: String(Math.max(1, index - 1)), to: String(index) });
    back.disabled = index <= 1;
    replaceHash(clusterHash(index));
  };

  let settle: ReturnType<typeof setTimeout> | undefined;
  slider.addEventListener("input", () => {
    typed.value = slider.value;
    clearTimeout(settle);
    settle = setTimeout(() => show(Number(slider.value)), SETTLE_MS);
  });
  slider.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      clearTimeout(settle);
      show(Number(slider.value));
    }
  });
  controls.addEventListener("submit", (e) => {
    e.preventDefault();
    const n = Number(typed.value);
    if (!Number.isSafeInteger(n) || n < 1 || n > latest) {
      note.textContent = `Type an index from 1 to ${latest}.`;
      return;
    }
    show(n);
  });
  typed.addEventListener("change", () => controls.requestSubmit());
  back.addEventListener("click", () => {
    if (current > 1) show(current - 1, current - 1);
  });
  forward.addEventListener("click", () => {
    forward.disabled = true;
    note.textContent = "Looking for the next change…";
    nextChangeAfter(current, NEXT_WAIT_MS, signal)
      .then((next) => {
        if (next === undefined) {
          note.textContent = `No change to jobs, nodes or allocations after index ${current} yet.`;
          return;
        }
        if (next > latest) raiseLatest(next);
        note.textContent = "";
        show(next);
      })
      .catch((err: unknown) => {
        if (!isAbort(err)) note.textContent = messageOf(err);
      })
      .finally(() => {
        forward.disabled = false;
      });
  });
  toLatest.addEventListener("click", () => {
    latestIndex(signal)
      .then((n) => {
        raiseLatest(n);
        show(n);
      })
      .catch((err: unknown) => {
        if (!isAbort(err)) note.textContent = messageOf(err);
      });
  });
  const raiseLatest = (n: number) => {
    latest = Math.max(latest, n);
    slider.max = String(latest);
    typed.max = String(latest);
  };

  main.replaceChildren(heading, controls, note, body);
  setIndex(current);
  show(current);
  focusHeading(heading);
}
