import type { Observable, Subscription } from "rxjs";

/** A blocking read's wait, as OpenWaits links it (its own fields: no entry allocated per wait). */
export interface OpenWait {
  openPrev: OpenWait | undefined;
  openNext: OpenWait | undefined;
  finish(why: "closing"): void;
}

/**
 * The blocking reads waiting on one server, ended together when it starts
 * closing: one subscription to closing$ for all of them while any waits.
 * A subscription per wait cost a subscriber, its observer, a teardown and
 * its closure, and ending one scanned the Subject's array of observers:
 * with 5,000 nodes' long polls open, O(5,000) per answered poll.
 */
export class OpenWaits {
  private head: OpenWait | undefined;
  private subscription: Subscription | undefined;
  private closed = false;

  constructor(private readonly closing$: Observable<unknown>) {}

  /** Links `wait`; false, and not linked, when the server is closing already. */
  add(wait: OpenWait): boolean {
    // A completed closing$ calls close at once, on subscribing.
    if (this.subscription === undefined && !this.closed)
      this.subscription = this.closing$.subscribe({ next: this.close, complete: this.close });
    if (this.closed) return false;
    const head = this.head;
    wait.openNext = head;
    wait.openPrev = undefined;
    if (head !== undefined) head.openPrev = wait;
    this.head = wait;
    return true;
  }

  remove(wait: OpenWait): void {
    const { openPrev: prev, openNext: next } = wait;
    if (prev === undefined) {
      // Not linked (never added, or removed already).
      if (this.head !== wait) return;
      this.head = next;
    } else prev.openNext = next;
    if (next !== undefined) next.openPrev = prev;
    wait.openPrev = undefined;
    wait.openNext = undefined;
    if (this.head === undefined && this.subscription !== undefined) {
      this.subscription.unsubscribe();
      this.subscription = undefined;
    }
  }

  private readonly close = (): void => {
    if (this.closed) return;
    this.closed = true;
    for (let wait = this.head; wait !== undefined; ) {
      const next = wait.openNext;
      // Answers it, and removes it.
      wait.finish("closing");
      wait = next;
    }
  };
}
