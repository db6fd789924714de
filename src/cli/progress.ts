/**
 * Progress lines for long CLI work (replay, export, bulk deletes): at most one
 * line a second, with the count, share and rate, so a person or a CI
 * log sees it move without being flooded.
 */
export class Progress {
  private done_ = 0;
  private readonly started = performance.now();
  private lastPrinted = performance.now();

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly out: NodeJS.WritableStream,
    private readonly everyMs = 1000,
  ) {}

  advance(n: number): void {
    this.done_ += n;
    const now = performance.now();
    if (now - this.lastPrinted >= this.everyMs) {
      this.lastPrinted = now;
      this.print(now);
    }
  }

  done(): void {
    this.print(performance.now());
  }

  private print(now: number): void {
    const seconds = (now - this.started) / 1000;
    const rate = seconds > 0 ? Math.round(this.done_ / seconds) : 0;
    const share = this.total > 0 ? ` (${Math.floor((this.done_ / this.total) * 100)}%)` : "";
    this.out.write(
      `${this.label}: ${this.done_.toLocaleString("en-US")}/${this.total.toLocaleString("en-US")}${share}, ${rate.toLocaleString("en-US")} records/s\n`,
    );
  }
}
