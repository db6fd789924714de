import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import {
  ANY,
  BACKWARDS,
  END,
  EventStoreDBClient,
  jsonEvent,
  NO_STREAM,
  type ResolvedEvent,
  START,
  StreamNotFoundError,
  type StreamSubscription,
  WrongExpectedVersionError,
} from "@eventstore/db-client";
import type { Logger } from "pino";
import { BehaviorSubject, distinctUntilChanged, type Observable } from "rxjs";
import type { Leadership, ServerMember } from "../leadership.ts";
import { parseEsdbUrl } from "../log/esdb/esdb-url.ts";
import { LogError } from "../log/event-log.ts";
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
} from "./esdb-lease.ts";

export interface EsdbLeadershipOptions {
  /** The `esdb://` URL of the log; the lease lives beside its stream, in `<stream>-leader`. */
  readonly logUrl: string;
  readonly serverName: string;
  /** The lease's time to live: how long the leader may go unheard before another takes over. */
  readonly sessionTimeoutMs: number;
  readonly logger: Logger;
}

export const LEASE_EVENT_TYPE = "chronomad.lease";
export const MEMBER_EVENT_TYPE = "chronomad.member";
// Renewals and heartbeats are kept only this long in their streams: they
// only ever matter as the latest few.
const KEPT_EVENTS = 100;

/** A member's heartbeat, and when this server last heard it (its own clock). */
interface Heard {
  readonly member: Lease;
  readonly at: number;
}

const now = () => performance.now();
const FOREIGN: Lease = { server: "", instance: "", address: "", rpc: "", term: 0, ttlMs: 0 };

/** A lease or member event's data, or undefined for anything else. */
export function leaseOf(resolved: ResolvedEvent): Lease | undefined {
  const event = resolved.event;
  if (!event?.isJson || (event.type !== LEASE_EVENT_TYPE && event.type !== MEMBER_EVENT_TYPE))
    return undefined;
  const d = event.data as Record<string, unknown>;
  if (typeof d.server !== "string" || typeof d.instance !== "string" || typeof d.address !== "string") {
    return undefined;
  }
  return {
    server: d.server,
    instance: d.instance,
    address: d.address,
    rpc: typeof d.rpc === "string" ? d.rpc : "",
    term: typeof d.term === "number" ? d.term : 0,
    ttlMs: typeof d.ttlMs === "number" ? d.ttlMs : 0,
  };
}

/**
 * Leader election for servers sharing an EventStoreDB log: a lease in the
 * stream `<stream>-leader`, claimed and renewed by appends that expect the
 * revision last seen (the rules are esdb-lease.ts's, this class only reads,
 * subscribes and appends). Each server also appends a heartbeat to
 * `<stream>-members` every renewal period, from which it lists its peers.
 *
 * A leader deposed without noticing (paused past its lease) may still act
 * for a moment; the leadership epoch in the log fences its late writes
 * (projections/leadership.ts), as on Kafka.
 */
export class EsdbLeadership implements Leadership {
  readonly exclusive = false;
  private readonly leading = new BehaviorSubject(false);
  readonly leader$: Observable<boolean> = this.leading.pipe(distinctUntilChanged());
  private readonly client: EventStoreDBClient;
  private readonly leaseStream: string;
  private readonly membersStream: string;
  private readonly renewEveryMs: number;
  private state: LeaseState;
  private readonly heard = new Map<string, Heard>();
  private subscriptions: StreamSubscription[] = [];
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private lastContact = now();
  private lastHeartbeat = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: EsdbLeadershipOptions) {
    const address = parseEsdbUrl(options.logUrl);
    this.client = EventStoreDBClient.connectionString(address.connectionString);
    this.leaseStream = `${address.stream}-leader`;
    this.membersStream = `${address.stream}-members`;
    this.renewEveryMs = Math.max(50, Math.floor(options.sessionTimeoutMs / 3));
    this.state = initialLease({
      server: options.serverName,
      instance: randomUUID(),
      address: "",
      rpc: "",
      term: 0,
      ttlMs: options.sessionTimeoutMs,
    });
  }

  /** Reads the lease, claims it if free, and resolves once this server knows whether it leads. */
  async join(address: string, rpcAddress = ""): Promise<void> {
    this.state = { ...this.state, me: { ...this.state.me, address, rpc: rpcAddress } };
    for (const stream of [this.leaseStream, this.membersStream]) {
      await this.client.setStreamMetadata(stream, { maxCount: KEPT_EVENTS }).catch((err: unknown) => {
        this.options.logger.warn({ err, stream }, "cannot bound the election stream's length");
      });
    }
    await this.readLease().catch((err: unknown) => {
      const reason = err instanceof Error ? err.message : String(err);
      throw Object.assign(
        new LogError(
          `cannot join the leader election on EventStoreDB stream ${this.leaseStream}: ${reason}`,
          "io",
        ),
        { cause: err },
      );
    });
    this.subscribe();
    await this.step();
    this.timer = setInterval(() => void this.step(), Math.max(20, Math.floor(this.renewEveryMs / 2)));
  }

  isLeader(): boolean {
    return leads(this.state, now());
  }

  leaderAddress(): string {
    return currentLease(this.state, now())?.address ?? "";
  }

  peers(): readonly string[] {
    return this.members().map((m) => m.address);
  }

  members(): readonly ServerMember[] {
    const t = now();
    const leader = this.leaderAddress();
    const me = this.state.me;
    const byAddress = new Map<string, Lease>([[me.address, me]]);
    // The leader is a member even before its first heartbeat is heard.
    const holder = currentLease(this.state, t);
    if (holder) byAddress.set(holder.address, holder);
    for (const { member, at } of this.heard.values()) {
      if (member.ttlMs > 0 && t < at + 3 * member.ttlMs && !byAddress.has(member.address)) {
        byAddress.set(member.address, member);
      }
    }
    return [...byAddress.values()]
      .sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0))
      .map((m) => ({
        name: m.server,
        address: m.address,
        rpcAddress: m.rpc,
        leader: leader !== "" && m.address === leader,
        self: m.address === me.address,
      }));
  }

  lastContactMs(): number {
    return this.isLeader() ? 0 : Math.round(now() - this.lastContact);
  }

  /** Releases the lease if held, so another server takes over at once instead of after the TTL. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    const leaving = release(this.state, now());
    this.state = leave(this.state);
    this.leading.next(false);
    await Promise.allSettled(this.subscriptions.map((s) => s.unsubscribe()));
    if (leaving) {
      await this.append(this.leaseStream, leaving.lease, leaving.expected ?? NO_STREAM).catch(
        () => undefined,
      );
    }
    if (this.state.known) {
      await this.append(this.membersStream, { ...this.state.me, ttlMs: 0 }, ANY).catch(() => undefined);
    }
    this.leading.complete();
    await this.client.dispose().catch(() => undefined);
  }

  /** One turn: append what the lease calls for, heartbeat, and publish whether this server leads. */
  private async step(): Promise<void> {
    if (this.closed) return;
    if (this.state.stale) await this.readLease().catch(() => undefined);
    const t = now();
    const want = nextAppend(this.state, t, this.renewEveryMs);
    if (t >= this.lastHeartbeat + this.renewEveryMs) {
      this.lastHeartbeat = t;
      void this.append(this.membersStream, this.state.me, ANY).catch((err: unknown) => {
        this.options.logger.warn({ err }, "cannot append this server's heartbeat to the members stream");
      });
    }
    if (want) await this.claim(want);
    this.publish();
  }

  private async claim(want: LeaseAppend): Promise<void> {
    this.state = sent(this.state, want, now());
    try {
      const revision = await this.append(this.leaseStream, want.lease, want.expected ?? NO_STREAM);
      this.state = appended(this.state, revision, now());
    } catch (err) {
      const conflict = err instanceof WrongExpectedVersionError;
      this.state = refused(this.state, conflict ? "refused" : "failed");
      if (!conflict) this.options.logger.warn({ err }, "cannot append to the leader lease stream");
      // Someone else's lease is there: read it, so this server waits for its TTL.
      if (conflict) await this.readLease().catch(() => undefined);
    }
  }

  private publish(): void {
    const leading = this.isLeader();
    if (leading !== this.leading.value) {
      this.options.logger.info(
        { leader: leading, term: this.state.held?.term ?? this.state.seen?.lease.term },
        leading ? "elected leader" : "following",
      );
    }
    if (!this.closed) this.leading.next(leading);
  }

  private async append(stream: string, lease: Lease, expected: bigint | typeof NO_STREAM | typeof ANY) {
    const type = stream === this.leaseStream ? LEASE_EVENT_TYPE : MEMBER_EVENT_TYPE;
    const result = await this.client.appendToStream(stream, jsonEvent({ type, data: { ...lease } }), {
      expectedRevision: expected,
    });
    return result.nextExpectedRevision;
  }

  /** The lease stream's last event (or its absence), fed to the lease. */
  private async readLease(): Promise<void> {
    let revision: bigint | undefined;
    let lease: Lease | undefined;
    try {
      for await (const resolved of this.client.readStream(this.leaseStream, {
        direction: BACKWARDS,
        fromRevision: END,
        maxCount: 1,
      })) {
        revision = resolved.event?.revision;
        lease = leaseOf(resolved);
      }
    } catch (err) {
      if (!(err instanceof StreamNotFoundError)) throw err;
    }
    this.heardLease(revision, lease);
  }

  private heardLease(revision: bigint | undefined, found: Lease | undefined): void {
    // An event that is no lease (written by something else) holds nothing:
    // claimed over at its revision, like a released lease.
    const lease = revision !== undefined && !found ? FOREIGN : found;
    this.state = observe(this.state, revision, lease, now());
    if (found && found.instance !== this.state.me.instance) this.lastContact = now();
  }

  private subscribe(): void {
    // From the last lease event seen, so nothing appended since the read is
    // missed (whether the client starts at that revision or just after, news
    // no newer than what was seen changes nothing).
    const from = this.state.seen?.revision;
    const lease = this.client.subscribeToStream(this.leaseStream, { fromRevision: from ?? START });
    lease.on("data", (resolved: ResolvedEvent) => {
      const event = resolved.event;
      if (!event) return;
      this.heardLease(event.revision, leaseOf(resolved));
      this.publish();
    });
    const members = this.client.subscribeToStream(this.membersStream, { fromRevision: START });
    members.on("data", (resolved: ResolvedEvent) => {
      const member = leaseOf(resolved);
      if (member && member.instance !== this.state.me.instance) {
        this.heard.set(member.instance, { member, at: now() });
      }
    });
    for (const s of [lease, members]) {
      s.on("error", (err: Error) => {
        if (!this.closed)
          this.options.logger.warn({ err }, "election stream subscription failed; reading again");
        this.resubscribe();
      });
    }
    this.subscriptions = [lease, members];
  }

  private resubscribe(): void {
    if (this.closed) return;
    const old = this.subscriptions;
    this.subscriptions = [];
    void Promise.allSettled(old.map((s) => s.unsubscribe())).then(() =>
      setTimeout(() => {
        if (this.closed) return;
        void this.readLease()
          .catch(() => undefined)
          .then(() => this.subscribe());
      }, this.renewEveryMs),
    );
  }
}
