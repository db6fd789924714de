import uPlot from "uplot";
import { getJson, isAbort } from "../api.ts";
import { h } from "../dom.ts";
import { inParallel } from "../in-parallel.ts";
import type { AllocStub, HistoryEntry } from "../types.ts";

/** Allocations whose histories are read for the chart: beyond this the chart says it shows the first ones. */
const MAX_ALLOCS = 60;
const PARALLEL = 4;
const WHOLE_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 100_000, 1_000_000];

const STATUSES = ["pending", "running", "complete", "failed", "lost", "unknown"] as const;
const COLORS: Readonly<Record<string, string>> = {
  pending: "#8a6d00",
  running: "#1a7f37",
  complete: "#0550ae",
  failed: "#cf222e",
  lost: "#6e7781",
  unknown: "#8250df",
};

/**
 * A job's allocations by client status over the log's index, drawn from each
 * allocation's own history (exact steps at every transition, no sampling).
 * Drawn after the timeline is shown; failures only leave a note.
 */
export function jobStatusChart(
  slot: HTMLElement,
  jobId: string,
  namespace: string | undefined,
  signal: AbortSignal,
): void {
  const note = h("p", { class: "hint", "aria-live": "polite" }, "Loading the allocations chart…");
  slot.replaceChildren(note);
  draw(slot, note, jobId, namespace, signal).catch((err: unknown) => {
    if (!isAbort(err)) note.textContent = `No chart: ${err instanceof Error ? err.message : String(err)}`;
  });
}

async function draw(
  slot: HTMLElement,
  note: HTMLElement,
  jobId: string,
  namespace: string | undefined,
  signal: AbortSignal,
): Promise<void> {
  const allocs = await getJson<AllocStub[]>(
    `/v1/job/${encodeURIComponent(jobId)}/allocations`,
    { namespace, all: "true" },
    signal,
  );
  if (allocs.body.length === 0) {
    note.textContent = "The job has no allocations to chart.";
    return;
  }
  const ids = allocs.body.slice(0, MAX_ALLOCS).map((a) => a.ID);
  const histories = await inParallel(ids, PARALLEL, (id) =>
    getJson<HistoryEntry[]>(`/v1/allocation/${encodeURIComponent(id)}/history`, {}, signal).then(
      (a) => a.body,
    ),
  );
  const data = statusSeries(histories);
  const figure = h("figure", { class: "chart" });
  const caption = h(
    "figcaption",
    {},
    `Allocations of ${jobId} by client status, by log index` +
      (allocs.body.length > ids.length ? ` (the first ${ids.length} of ${allocs.body.length})` : ""),
  );
  figure.append(caption);
  slot.replaceChildren(figure);
  const opts: uPlot.Options = {
    width: Math.min(900, Math.max(320, slot.clientWidth || 640)),
    height: 220,
    scales: { x: { time: false } },
    // Indexes and counts are whole numbers: no ticks between them.
    axes: [
      { label: "index", incrs: WHOLE_STEPS },
      { label: "allocations", incrs: WHOLE_STEPS },
    ],
    series: [
      { label: "index" },
      ...STATUSES.map((s) => ({
        label: s,
        stroke: COLORS[s],
        width: 2,
        paths: uPlot.paths.stepped?.({ align: 1 }),
      })),
    ],
  };
  new uPlot(opts, data, figure);
}

/** Counts per status after every index at which one of the allocations changed status. */
export function statusSeries(histories: readonly (readonly HistoryEntry[])[]): uPlot.AlignedData {
  const steps: { index: number; from: string | null; to: string | null }[] = [];
  for (const entries of histories) {
    let status: string | null = null;
    for (const e of entries) {
      let next: string | null = status;
      if (e.Field === "(created)") next = statusIn(e.To);
      else if (e.Field === "ClientStatus") next = typeof e.To === "string" ? e.To : null;
      else if (e.Field === "(deleted)") next = null;
      if (next !== status) steps.push({ index: e.Index, from: status, to: next });
      status = next;
    }
  }
  steps.sort((a, b) => a.index - b.index);
  const counts = new Map<string, number>(STATUSES.map((s) => [s, 0]));
  const xs: number[] = [];
  const ys: number[][] = STATUSES.map(() => []);
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i]!;
    if (step.from) counts.set(step.from, (counts.get(step.from) ?? 0) - 1);
    if (step.to) counts.set(step.to, (counts.get(step.to) ?? 0) + 1);
    if (steps[i + 1]?.index === step.index) continue;
    xs.push(step.index);
    for (const [j, s] of STATUSES.entries()) ys[j]!.push(counts.get(s) ?? 0);
  }
  return [xs, ...ys];
}

function statusIn(values: unknown): string | null {
  if (typeof values !== "object" || values === null) return null;
  const status = (values as Record<string, unknown>).ClientStatus;
  return typeof status === "string" ? status : null;
}
