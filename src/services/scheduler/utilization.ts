/** How far back a utilization figure looks (go-metrics' in-memory interval). */
export const UTILIZATION_WINDOW_MS = 10_000;
const MARK_EVERY_MS = 1_000;

/**
 * The share of the last window that a set of holders (workers) spent busy,
 * kept as running totals with a mark about once a second, so it costs the
 * same whatever the rate of work and needs no timer.
 */
export class Utilization {
  private closedMs = 0;
  private readonly open = new Map<unknown, number>();
  private marks: { t: number; busy: number }[] = [];

  constructor(
    private readonly windowMs = UTILIZATION_WINDOW_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** How many holders are busy now. */
  get busy(): number {
    return this.open.size;
  }

  begin(holder: unknown): void {
    if (this.open.has(holder)) return;
    this.open.set(holder, this.now());
    this.mark();
  }

  end(holder: unknown): void {
    const since = this.open.get(holder);
    if (since === undefined) return;
    this.open.delete(holder);
    this.closedMs += this.now() - since;
    this.mark();
  }

  /** The busy share of `holders` over the last window, 0 to 1. */
  fraction(holders: number): number {
    if (holders <= 0) return 0;
    this.mark();
    const t = this.now();
    const first = this.marks[0]!;
    const span = t - first.t;
    if (span <= 0) return this.open.size > 0 ? Math.min(1, this.open.size / holders) : 0;
    return Math.max(0, Math.min(1, (this.busyAt(t) - first.busy) / (span * holders)));
  }

  private busyAt(t: number): number {
    let busy = this.closedMs;
    for (const since of this.open.values()) busy += t - since;
    return busy;
  }

  private mark(): void {
    const t = this.now();
    const last = this.marks[this.marks.length - 1];
    if (!last || t - last.t >= MARK_EVERY_MS) this.marks.push({ t, busy: this.busyAt(t) });
    // Keep one mark at or before the window's start, so the figure spans the whole window.
    while (this.marks.length > 2 && this.marks[1]!.t <= t - this.windowMs) this.marks.shift();
  }
}
