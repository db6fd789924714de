import { ApiError, isAbort, messageOf } from "../api.ts";
import { h, link, shortId } from "../dom.ts";
import { type StreamEvent, streamFrames } from "../event-stream.ts";
import { replaceHash, routeHash, timelineHash } from "../router.ts";
import { latestIndex } from "../snapshot.ts";
import { focusHeading, setViewState, showError } from "../view-state.ts";

/** Where the feed resumes after a reload or a server restart. */
export const LAST_INDEX_KEY = "chronomad.live.lastIndex";
/** The cluster the last index was seen on (the stream's X-Chronomad-Cluster-Id). */
const CLUSTER_KEY = "chronomad.live.clusterId";
/** Events kept on the page: older ones are dropped so a busy cluster does not grow the DOM. */
const MAX_EVENTS = 500;
const RETRY_MS = [1000, 2000, 5000, 10000];

/** Event topics whose key names an object a timeline opens on. */
const TIMELINE_OF_TOPIC: Readonly<Record<string, string>> = {
  Allocation: "allocation",
  Node: "node",
  Job: "job",
  Evaluation: "evaluation",
};

/**
 * `#/live?topics=&namespace=&key=`: the event stream as a feed, newest
 * first. It resumes from the last index seen (kept in localStorage) after a
 * reload, and reconnects from it when the stream ends (a server restart).
 */
export async function liveView(
  main: HTMLElement,
  query: URLSearchParams,
  signal: AbortSignal,
): Promise<void> {
  const heading = h("h2", { tabindex: "-1" }, "Live events");
  const topics = h("input", {
    id: "live-topics",
    type: "text",
    value: query.get("topics") ?? "",
    placeholder: "Job, Allocation:<id>, Node",
    "aria-describedby": "live-topics-help",
  });
  const namespace = h("input", {
    id: "live-namespace",
    type: "text",
    value: query.get("namespace") ?? "",
    placeholder: "default",
  });
  const key = h("input", {
    id: "live-key",
    type: "text",
    value: query.get("key") ?? "",
    placeholder: "an ID or name",
  });
  // Moving content must be pausable (WCAG 2.2.2): paused, events wait off the page, counted.
  const pause = h("button", { type: "button", "aria-pressed": "false" }, "Pause");
  let paused = false;
  let waiting: HTMLLIElement[] = [];
  const show = (items: readonly HTMLLIElement[]) => {
    for (const item of items) feed.prepend(item);
    while (feed.childElementCount > MAX_EVENTS) feed.lastElementChild?.remove();
  };
  pause.addEventListener("click", () => {
    paused = !paused;
    pause.setAttribute("aria-pressed", String(paused));
    pause.textContent = paused ? "Resume" : "Pause";
    if (!paused) {
      show(waiting);
      waiting = [];
    }
  });
  const restart = h(
    "button",
    { type: "button", title: "Forget the last index seen and follow from now" },
    "From now",
  );
  const form = h(
    "form",
    { class: "live-controls" },
    h("label", { for: "live-topics" }, "Topics"),
    topics,
    h("label", { for: "live-namespace" }, "Namespace"),
    namespace,
    h("label", { for: "live-key" }, "Key"),
    key,
    h("button", { type: "submit" }, "Apply"),
    restart,
    pause,
    h(
      "p",
      { id: "live-topics-help", class: "hint" },
      "Topics: comma-separated Topic or Topic:Key (Job, Node, Allocation, Evaluation, Deployment, Service…); empty for all. Key: only events with this key. Namespace: * for all.",
    ),
  );
  const status = h("p", { class: "stream-status", role: "status" });
  const feed = h("ol", {
    "data-testid": "live-feed",
    class: "feed",
    role: "log",
    "aria-live": "polite",
    "aria-label": "Events, newest first",
  });
  const problem = h("div");
  main.replaceChildren(heading, form, status, problem, feed);

  let stream: AbortController | undefined;
  const follow = async () => {
    stream?.abort();
    const mine = new AbortController();
    stream = mine;
    signal.addEventListener("abort", () => mine.abort(), { once: true });
    problem.replaceChildren();
    setViewState(main, "loading", "Connecting to the event stream…");
    const filter = {
      topics: topicFilters(topics.value, key.value.trim()),
      namespace: namespace.value.trim() || undefined,
    };
    replaceHash(
      routeHash(
        "live",
        [],
        clean({ topics: topics.value.trim(), namespace: namespace.value.trim(), key: key.value.trim() }),
      ),
    );
    for (let attempt = 0; !mine.signal.aborted; attempt++) {
      try {
        let after = storedIndex();
        if (after === undefined) {
          after = await latestIndex(mine.signal);
          localStorage.setItem(LAST_INDEX_KEY, String(after));
        }
        status.textContent = `Following from index ${after}.`;
        const opened = (response: Response) => {
          const cluster = response.headers.get("X-Chronomad-Cluster-Id") ?? "";
          const seen = localStorage.getItem(CLUSTER_KEY);
          if (cluster !== "") localStorage.setItem(CLUSTER_KEY, cluster);
          // Another log than the one the index was seen on (a memory log restarted): follow it from its start.
          if (seen !== null && cluster !== "" && seen !== cluster && after !== 0) throw new NewLog();
        };
        for await (const frame of streamFrames({ after, ...filter }, mine.signal, opened)) {
          if (frame.Error) throw new Error(frame.Error);
          if (main.dataset.state !== "loaded") setViewState(main, "loaded", "");
          attempt = 0;
          if (frame.Index === undefined) continue;
          const items = (frame.Events ?? []).map(eventItem);
          if (paused) {
            waiting.push(...items);
            if (waiting.length > MAX_EVENTS) waiting = waiting.slice(-MAX_EVENTS);
          } else show(items);
          localStorage.setItem(LAST_INDEX_KEY, String(frame.Index));
          status.textContent = `Following: last index seen ${frame.Index}.${paused ? ` Paused: ${waiting.length} events waiting.` : ""}`;
        }
        status.textContent = "The stream ended; reconnecting…";
      } catch (err) {
        if (isAbort(err) || mine.signal.aborted) return;
        if (err instanceof NewLog) {
          localStorage.setItem(LAST_INDEX_KEY, "0");
          status.textContent = "The server has a new log: following it from its start.";
          attempt = -1;
          continue;
        }
        // A refused request (a bad filter, a missing permission) fails the same way again: say why and stop.
        if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) {
          status.textContent = "Not following.";
          showError(main, problem, messageOf(err));
          return;
        }
        status.textContent = `${messageOf(err)}: reconnecting from index ${storedIndex() ?? "now"}…`;
      }
      await sleep(RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]!, mine.signal);
    }
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    feed.replaceChildren();
    waiting = [];
    void follow();
  });
  restart.addEventListener("click", () => {
    localStorage.removeItem(LAST_INDEX_KEY);
    feed.replaceChildren();
    waiting = [];
    void follow();
  });
  focusHeading(heading);
  void follow().catch((err: unknown) => {
    if (!isAbort(err)) showError(main, problem, messageOf(err));
  });
}

function eventItem(event: StreamEvent): HTMLLIElement {
  const kind = TIMELINE_OF_TOPIC[event.Topic];
  const keyPart =
    kind && event.Key !== ""
      ? link(
          kind === "job"
            ? `${timelineHash(kind, event.Key)}?namespace=${encodeURIComponent(event.Namespace)}`
            : timelineHash(kind, event.Key),
          shortId(event.Key),
          { title: event.Key },
        )
      : h("span", {}, event.Key);
  return h(
    "li",
    {
      "data-testid": "event",
      "data-topic": event.Topic,
      "data-type": event.Type,
      "data-key": event.Key,
      "data-index": event.Index,
    },
    link(routeHash("cluster", [], { index: String(event.Index) }), `#${event.Index}`),
    " ",
    h("span", { class: "topic" }, event.Topic),
    " ",
    h("code", {}, event.Type),
    " ",
    keyPart,
    event.Namespace ? h("span", { class: "ns" }, ` (${event.Namespace})`) : null,
    event.Payload === undefined ? null : payloadDetails(event.Payload),
  );
}

/** Payloads are large (a whole job or allocation): drawn only when opened. */
const MAX_PAYLOAD_CHARS = 20_000;

function payloadDetails(payload: unknown): HTMLDetailsElement {
  const pre = h("pre", { class: "payload" });
  const details = h("details", {}, h("summary", {}, "Payload"), pre);
  details.addEventListener("toggle", () => {
    if (!details.open || pre.textContent !== "") return;
    const json = JSON.stringify(payload, null, 2);
    pre.textContent =
      json.length > MAX_PAYLOAD_CHARS ? `${json.slice(0, MAX_PAYLOAD_CHARS)}\n… (truncated)` : json;
  });
  return details;
}

/** The stream's `topic` parameters: each `Topic[:Key]`, a key box narrowing the topics that name none. */
export function topicFilters(text: string, key: string): string[] {
  const topics = text
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "");
  if (key === "") return topics;
  if (topics.length === 0) return [`*:${key}`];
  return topics.map((t) => (t.includes(":") ? t : `${t}:${key}`));
}

function storedIndex(): number | undefined {
  const raw = localStorage.getItem(LAST_INDEX_KEY);
  const n = Number(raw);
  return raw !== null && raw !== "" && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The stream comes from another cluster's log than the index seen. */
class NewLog extends Error {}

const clean = (o: Record<string, string>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== ""));

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
