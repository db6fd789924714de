/**
 * The lease that elects the leader of servers sharing an EventStoreDB log,
 * as a pure state machine: no I/O and no clock of its own. The driver
 * (esdb-leadership.ts) feeds it what it reads from the lease stream and the
 * answers to its appends, each with the time of its own monotonic clock,
 * and carries out the appends it asks for.
 *
 * Safety rests on two things. EventStoreDB appends a lease event only if
 * the stream still ends at the revision the appender last saw (expected
 * revision), so of two claims made on the same view exactly one lands. And
 * a holder believes it leads only until `ttl` after it *sent* its last
 * successful claim or renewal, while another server takes over only `ttl`
 * after it *saw* the holder's last event, which came back after it was
 * sent: with clocks that run at the same rate (no clock is ever compared
 * with another's readings), the holder stops believing before anyone else
 * may claim.
 */

/** One event of the lease stream. */
export interface Lease {
  /** The holder's server name. */
  readonly server: string;
  /** The holder's process: a restarted server is another holder. */
  readonly instance: string;
  /** Its advertised HTTP address, where followers forward what only the leader does. */
  readonly address: string;
  /** Its advertised RPC address; "" when none. */
  readonly rpc: string;
  /** The lease's term: one more than the lease it took over; kept by renewals. */
  readonly term: number;
  /** How long it holds without renewal, in ms; 0 when released (its holder left). */
  readonly ttlMs: number;
}

/** The last lease event seen, at its stream revision, and when this server saw it. */
export interface Seen {
  readonly revision: bigint;
  readonly lease: Lease;
  readonly at: number;
}

export interface LeaseState {
  /** Who this server is, as a lease would name it (ttlMs: the configured TTL). */
  readonly me: Lease;
  /** undefined: the stream held no lease when last read. */
  readonly seen: Seen | undefined;
  /** Set once the stream has been read at least once: before, nothing is decided. */
  readonly known: boolean;
  /** An append in flight, and when it was sent. */
  readonly pending: { readonly lease: Lease; readonly sentAt: number } | undefined;
  /** This server's lease: until `sentAt + ttlMs` it leads. */
  readonly held: { readonly revision: bigint; readonly sentAt: number; readonly term: number } | undefined;
  /** After a refused append, nothing more is tried until the stream is read again. */
  readonly stale: boolean;
}

/** An append the driver must make: `lease` at `expected` (undefined: the stream must not exist). */
export interface LeaseAppend {
  readonly lease: Lease;
  readonly expected: bigint | undefined;
}

export function initialLease(me: Lease): LeaseState {
  return { me, seen: undefined, known: false, pending: undefined, held: undefined, stale: false };
}

/** Whether this server leads at `now`. */
export function leads(state: LeaseState, now: number): boolean {
  return state.held !== undefined && now < state.held.sentAt + state.me.ttlMs;
}

/** The lease in force as this server last saw it (its own while it leads); undefined when none or released. */
export function currentLease(state: LeaseState, now: number): Lease | undefined {
  if (leads(state, now)) return state.me;
  const seen = state.seen;
  if (!seen || seen.lease.ttlMs === 0 || now >= seen.at + seen.lease.ttlMs) return undefined;
  return seen.lease;
}

/**
 * The stream read (at open, after a refusal) or delivered by the
 * subscription: the lease event at `revision`, or (`lease` undefined) an
 * empty stream. Older news than already seen changes nothing.
 */
export function observe(
  state: LeaseState,
  revision: bigint | undefined,
  lease: Lease | undefined,
  now: number,
): LeaseState {
  if (revision === undefined || lease === undefined) {
    return state.seen === undefined ? { ...state, known: true, stale: false } : state;
  }
  if (state.seen && revision <= state.seen.revision) return { ...state, known: true, stale: false };
  const seen: Seen = { revision, lease, at: now };
  // This server's own append may be delivered before its answer: that
  // answer decides. Any other event after this server's lease was appended
  // over it, so the lease is gone.
  const mine = lease.instance === state.me.instance && state.pending !== undefined;
  const held = mine ? state.held : undefined;
  return { ...state, seen, known: true, stale: false, held };
}

/** What to append at `now`, if anything: a claim when the lease is free, a renewal when due. */
export function nextAppend(state: LeaseState, now: number, renewEveryMs: number): LeaseAppend | undefined {
  if (!state.known || state.pending || state.stale) return undefined;
  const seen = state.seen;
  if (state.held) {
    if (!leads(state, now) || now < state.held.sentAt + renewEveryMs) return undefined;
    return { lease: { ...state.me, term: state.held.term }, expected: state.held.revision };
  }
  if (seen && seen.lease.ttlMs > 0 && now < seen.at + seen.lease.ttlMs) return undefined;
  return { lease: { ...state.me, term: (seen?.lease.term ?? 0) + 1 }, expected: seen?.revision };
}

/** Marks `append` as sent at `now`. */
export function sent(state: LeaseState, append: LeaseAppend, now: number): LeaseState {
  return { ...state, pending: { lease: append.lease, sentAt: now } };
}

/** The append in flight landed at `revision`: this server holds the lease from when it was sent. */
export function appended(state: LeaseState, revision: bigint, now: number): LeaseState {
  const pending = state.pending;
  if (!pending) return state;
  // A later event already seen means this answer is older news than the stream.
  if (state.seen && revision < state.seen.revision) return { ...state, pending: undefined };
  const at = state.seen && revision === state.seen.revision ? state.seen.at : now;
  return {
    ...state,
    pending: undefined,
    seen: { revision, lease: pending.lease, at },
    held: { revision, sentAt: pending.sentAt, term: pending.lease.term },
  };
}

/**
 * The append in flight was refused (the stream moved on: someone else
 * appended) or failed without an answer. Either way this server no longer
 * counts on a lease it cannot prove it renewed; after a refusal it waits
 * for the stream to be read again before trying anything.
 */
export function refused(state: LeaseState, how: "refused" | "failed"): LeaseState {
  if (how === "refused") return { ...state, pending: undefined, held: undefined, stale: true };
  return { ...state, pending: undefined };
}

/** This server stops leading at once (it is leaving); nothing more is appended. */
export function leave(state: LeaseState): LeaseState {
  return { ...state, held: undefined, pending: undefined, stale: true };
}

/** The lease this server appends on leaving, so another takes over at once; undefined if it does not hold it. */
export function release(state: LeaseState, now: number): LeaseAppend | undefined {
  if (!state.held || !leads(state, now) || state.pending) return undefined;
  return { lease: { ...state.me, term: state.held.term, ttlMs: 0 }, expected: state.held.revision };
}
