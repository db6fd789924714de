/**
 * Promises waiting for the log to reach an index. Writers wait on the index
 * their append got; blocking reads wait on "anything after N".
 */
export class Waiters<T> {
  private readonly pending = new Map<number, { resolve: (v: T) => void; reject: (e: Error) => void }[]>();
  private lowest = Number.POSITIVE_INFINITY;

  wait(index: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const list = this.pending.get(index);
      if (list) list.push({ resolve, reject });
      else this.pending.set(index, [{ resolve, reject }]);
      if (index < this.lowest) this.lowest = index;
    });
  }

  /** Resolves every waiter at or below `index` with `value(itsIndex)`. */
  release(index: number, value: (index: number) => T): void {
    if (index < this.lowest) return;
    let lowest = Number.POSITIVE_INFINITY;
    for (const [i, list] of this.pending) {
      if (i <= index) {
        this.pending.delete(i);
        const v = value(i);
        for (const w of list) w.resolve(v);
      } else if (i < lowest) lowest = i;
    }
    this.lowest = lowest;
  }

  rejectAll(err: Error): void {
    for (const list of this.pending.values()) for (const w of list) w.reject(err);
    this.pending.clear();
    this.lowest = Number.POSITIVE_INFINITY;
  }
}
