import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  appended,
  currentLease,
  initialLease,
  type Lease,
  type LeaseAppend,
  type LeaseState,
  leads,
  leave,
  nextAppend,
  observe,
  refused,
  release,
  sent,
} from "../../src/cluster/esdb-lease.ts";

const TTL = 900;
const RENEW = 300;
const me = (name: string): Lease => ({
  server: name,
  instance: `${name}-1`,
  address: `${name}:4646`,
  rpc: `${name}:4647`,
  term: 0,
  ttlMs: TTL,
});

/** A joined server: it has read the stream (`revision`/`lease`, or an empty stream) at `now`. */
function joined(name: string, now: number, revision?: bigint, lease?: Lease): LeaseState {
  return observe(initialLease(me(name)), revision, lease, now);
}

/** Sends what the lease calls for at `now` and has it land at `revision`. */
function claimAt(
  state: LeaseState,
  now: number,
  revision: bigint,
): { state: LeaseState; append: LeaseAppend } {
  const append = nextAppend(state, now, RENEW);
  if (!append) throw new Error(`nothing to append at ${now}`);
  return { state: appended(sent(state, append, now), revision, now), append };
}

describe("the EventStoreDB lease", () => {
  it("decides nothing before the stream is read, then claims an empty stream expecting no stream", () => {
    const fresh = initialLease(me("a"));
    expect(nextAppend(fresh, 0, RENEW)).toBeUndefined();
    const a = joined("a", 0);
    expect(nextAppend(a, 0, RENEW)).toEqual({ lease: { ...me("a"), term: 1 }, expected: undefined });
    const { state } = claimAt(a, 0, 0n);
    expect(leads(state, 0)).toBe(true);
    expect(currentLease(state, 0)).toEqual(me("a"));
  });

  it("renews with the revision of its own last lease, every renewal period, keeping the term", () => {
    let { state } = claimAt(joined("a", 0), 0, 0n);
    expect(nextAppend(state, RENEW - 1, RENEW)).toBeUndefined();
    const renewal = nextAppend(state, RENEW, RENEW);
    expect(renewal).toEqual({ lease: { ...me("a"), term: 1 }, expected: 0n });
    state = appended(sent(state, renewal!, RENEW), 1n, RENEW + 5);
    // Held from when the renewal was sent, not from when its answer came.
    expect(leads(state, RENEW + TTL - 1)).toBe(true);
    expect(leads(state, RENEW + TTL)).toBe(false);
    // Its own renewal, delivered by the subscription, changes nothing.
    expect(observe(state, 1n, { ...me("a"), term: 1 }, RENEW + 10)).toEqual(state);
  });

  it("stops leading a TTL after its last successful renewal when renewals fail", () => {
    let { state } = claimAt(joined("a", 0), 0, 0n);
    const renewal = nextAppend(state, RENEW, RENEW)!;
    state = refused(sent(state, renewal, RENEW), "failed");
    expect(leads(state, TTL - 1)).toBe(true);
    expect(leads(state, TTL)).toBe(false);
    expect(nextAppend(state, TTL, RENEW)).toBeUndefined();
  });

  it("steps down at once when its renewal is refused, and waits to read the stream before trying again", () => {
    let { state } = claimAt(joined("a", 0), 0, 0n);
    const renewal = nextAppend(state, RENEW, RENEW)!;
    state = refused(sent(state, renewal, RENEW), "refused");
    expect(leads(state, RENEW)).toBe(false);
    expect(nextAppend(state, RENEW * 10, RENEW)).toBeUndefined();
    const b: Lease = { ...me("b"), term: 2 };
    state = observe(state, 1n, b, RENEW + 1);
    expect(currentLease(state, RENEW + 1)).toEqual(b);
    expect(nextAppend(state, RENEW + 1, RENEW)).toBeUndefined();
  });

  it("steps down when another server's lease appears after its own", () => {
    const { state } = claimAt(joined("a", 0), 0, 0n);
    const after = observe(state, 1n, { ...me("b"), term: 2 }, 10);
    expect(leads(after, 10)).toBe(false);
  });

  it("takes over only a TTL after it last saw the holder, on its own clock, with the next term", () => {
    const a: Lease = { ...me("a"), term: 4 };
    let b = joined("b", 1_000, 7n, a);
    expect(currentLease(b, 1_000)).toEqual(a);
    expect(nextAppend(b, 1_000 + TTL - 1, RENEW)).toBeUndefined();
    // A renewal seen restarts the wait.
    b = observe(b, 8n, a, 1_500);
    expect(nextAppend(b, 1_000 + TTL, RENEW)).toBeUndefined();
    expect(currentLease(b, 1_500 + TTL)).toBeUndefined();
    expect(nextAppend(b, 1_500 + TTL, RENEW)).toEqual({ lease: { ...me("b"), term: 5 }, expected: 8n });
  });

  it("takes over at once a lease its holder released, and releases only what it holds", () => {
    const { state: a } = claimAt(joined("a", 0), 0, 0n);
    const bye = release(a, 10);
    expect(bye).toEqual({ lease: { ...me("a"), term: 1, ttlMs: 0 }, expected: 0n });
    expect(leads(leave(a), 10)).toBe(false);
    const b = joined("b", 20, 1n, bye!.lease);
    expect(currentLease(b, 20)).toBeUndefined();
    expect(nextAppend(b, 20, RENEW)).toEqual({ lease: { ...me("b"), term: 2 }, expected: 1n });
    expect(release(b, 20)).toBeUndefined();
  });

  it("keeps its claim when the subscription delivers it before the append's answer", () => {
    const a = joined("a", 0);
    const claim = nextAppend(a, 0, RENEW)!;
    let state = sent(a, claim, 0);
    state = observe(state, 0n, claim.lease, 3);
    state = appended(state, 0n, 5);
    expect(leads(state, 5)).toBe(true);
    expect(state.held).toEqual({ revision: 0n, sentAt: 0, term: 1 });
  });

  it("never lets two candidates lead at once, nor hold the same term, whatever the order of events", () => {
    type Step =
      | { kind: "tick"; who: number }
      | { kind: "land"; who: number }
      | { kind: "answer"; who: number; lost: boolean }
      | { kind: "observe"; who: number }
      | { kind: "read"; who: number }
      | { kind: "leave"; who: number }
      | { kind: "wait"; ms: number };
    const who = fc.integer({ min: 0, max: 1 });
    const step: fc.Arbitrary<Step> = fc.oneof(
      { arbitrary: fc.record({ kind: fc.constant("tick" as const), who }), weight: 10 },
      { arbitrary: fc.record({ kind: fc.constant("land" as const), who }), weight: 10 },
      { arbitrary: fc.record({ kind: fc.constant("answer" as const), who, lost: fc.boolean() }), weight: 10 },
      { arbitrary: fc.record({ kind: fc.constant("observe" as const), who }), weight: 10 },
      { arbitrary: fc.record({ kind: fc.constant("read" as const), who }), weight: 10 },
      // Rare: a server that left takes no further part.
      { arbitrary: fc.record({ kind: fc.constant("leave" as const), who }), weight: 1 },
      {
        arbitrary: fc.record({
          kind: fc.constant("wait" as const),
          ms: fc.integer({ min: 1, max: TTL / 3 }),
        }),
        weight: 10,
      },
    );

    fc.assert(
      fc.property(fc.array(step, { minLength: 20, maxLength: 200, size: "max" }), (steps) => {
        // The stream: EventStoreDB's expected-revision append, on a list.
        const stream: Lease[] = [];
        const append = (a: LeaseAppend): bigint | "refused" => {
          const end = stream.length === 0 ? undefined : BigInt(stream.length - 1);
          if (a.expected !== end) return "refused";
          stream.push(a.lease);
          return BigInt(stream.length - 1);
        };
        let now = 0;
        const servers = ["a", "b"].map((name) => ({
          state: initialLease(me(name)),
          cursor: 0,
          flight: undefined as { append: LeaseAppend; result?: bigint | "refused" } | undefined,
          gone: false,
          terms: new Set<number>(),
        }));
        const read = (s: (typeof servers)[number]) => {
          const last = stream.length - 1;
          s.state = observe(s.state, last < 0 ? undefined : BigInt(last), stream[last], now);
        };
        for (const st of steps) {
          if (st.kind === "wait") {
            now += st.ms;
          } else {
            const s = servers[st.who]!;
            if (s.gone) continue;
            if (st.kind === "tick" && !s.flight) {
              const a = nextAppend(s.state, now, RENEW);
              if (a) {
                s.state = sent(s.state, a, now);
                s.flight = { append: a };
              }
            } else if (st.kind === "land" && s.flight && s.flight.result === undefined) {
              s.flight.result = append(s.flight.append);
            } else if (st.kind === "answer" && s.flight) {
              const { result } = s.flight;
              s.flight = undefined;
              if (st.lost || result === undefined) s.state = refused(s.state, "failed");
              else if (result === "refused") s.state = refused(s.state, "refused");
              else s.state = appended(s.state, result, now);
            } else if (st.kind === "observe" && s.cursor < stream.length) {
              s.state = observe(s.state, BigInt(s.cursor), stream[s.cursor], now);
              s.cursor++;
            } else if (st.kind === "read") {
              read(s);
            } else if (st.kind === "leave" && !s.flight) {
              const bye = release(s.state, now);
              s.state = leave(s.state);
              s.gone = true;
              if (bye) append(bye);
            }
          }
          const leaders = servers.filter((s) => !s.gone && leads(s.state, now));
          expect(leaders.length).toBeLessThanOrEqual(1);
          for (const s of leaders) {
            const term = s.state.held!.term;
            for (const other of servers) if (other !== s) expect(other.terms.has(term)).toBe(false);
            s.terms.add(term);
          }
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it("elects someone when servers keep reading and ticking, and keeps one leader while it renews", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 30 }), (order) => {
        const stream: Lease[] = [];
        let now = 0;
        const states = ["a", "b", "c"].map((n) => joined(n, 0));
        for (let round = 0; round < 10; round++) {
          for (const i of order) {
            const last = stream.length - 1;
            states[i] = observe(states[i]!, last < 0 ? undefined : BigInt(last), stream[last], now);
            const a = nextAppend(states[i]!, now, RENEW);
            if (!a) continue;
            const end = stream.length === 0 ? undefined : BigInt(stream.length - 1);
            const s = sent(states[i]!, a, now);
            if (a.expected === end) {
              stream.push(a.lease);
              states[i] = appended(s, BigInt(stream.length - 1), now);
            } else {
              states[i] = refused(s, "refused");
            }
          }
          expect(states.filter((s) => leads(s, now))).toHaveLength(1);
          now += RENEW;
        }
        // Renewed every period by one server: the first term never ended.
        expect(new Set(stream.map((l) => l.term))).toEqual(new Set([1]));
      }),
    );
  });
});
