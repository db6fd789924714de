import { Observable, type Subscriber } from "rxjs";

/**
 * A hot multicast of values to the subscribers of `observable`, as an RxJS
 * Subject's, for the store's change$: every row change of every applied
 * record goes through it, to a dozen or more subscribers on a server.
 * RxJS 7's Subject.next (its ES5 build, the one Node loads) makes a
 * closure and an iterator, and a result object per subscriber, on every
 * call: about half a kilobyte of garbage per change on a server, several
 * changes per placement. Here a call is a loop over an array.
 *
 * The same semantics as the Subject where the store relies on them:
 * subscribers are called in subscription order; one subscribed or
 * unsubscribed during a call is called, or not, as the call began (the
 * array is replaced, never changed); an error thrown by a subscriber is
 * RxJS's to report, as with a Subject; after `error`, every subscriber,
 * present and future, gets the error.
 */
export class Fanout<T> {
  private subscribers: readonly Subscriber<T>[] = [];
  private failure: { readonly error: unknown } | undefined;

  readonly observable: Observable<T> = new Observable<T>((subscriber) => {
    if (this.failure) {
      subscriber.error(this.failure.error);
      return;
    }
    this.subscribers = [...this.subscribers, subscriber];
    return () => {
      this.subscribers = this.subscribers.filter((s) => s !== subscriber);
    };
  });

  /** Whether anyone is subscribed (a Subject's `observed`). */
  get observed(): boolean {
    return this.subscribers.length > 0;
  }

  next(value: T): void {
    const subscribers = this.subscribers;
    for (let i = 0; i < subscribers.length; i++) subscribers[i]!.next(value);
  }

  error(error: unknown): void {
    if (this.failure) return;
    this.failure = { error };
    const subscribers = this.subscribers;
    this.subscribers = [];
    for (const s of subscribers) s.error(error);
  }
}
