import { type Admin, type Consumer, Kafka, type KafkaConfig } from "kafkajs";
import type { Logger } from "pino";
import { BehaviorSubject, distinctUntilChanged, type Observable } from "rxjs";
import type { Leadership, ServerMember } from "../leadership.ts";
import { LogError } from "../log/event-log.ts";
import { kafkajsLevel, pinoLogCreator } from "../log/kafka/kafka-logging.ts";
import { type KafkaLogAddress, parseKafkaUrl } from "../log/kafka/kafka-url.ts";
import { assignmentLeads, claimOfMetadata, LEADER_ASSIGNER, leaderAssigner } from "./leader-assignment.ts";

export interface KafkaLeadershipOptions {
  /** The `kafka://` URL of the log; the election runs beside it, on `<topic>.leader`. */
  readonly logUrl: string;
  readonly serverName: string;
  /** How long the coordinator waits for a silent member before it gives its partition away. */
  readonly sessionTimeoutMs: number;
  readonly logger: Logger;
  /** The leadership epoch this server holds now (0 if none); sent with every join, for stickiness. */
  readonly heldEpoch: () => number;
  /** Connection settings (ssl, sasl, ...) passed to kafkajs as they are. */
  readonly client?: Omit<KafkaConfig, "brokers" | "clientId" | "logCreator" | "logLevel">;
}

/** The group as last seen in a stable generation. */
interface GroupView {
  readonly leader: string;
  readonly peers: readonly string[];
  /** Each member's server name, by advertised address. */
  readonly names: ReadonlyMap<string, string>;
  /** Each member's advertised RPC address, by advertised (HTTP) address. */
  readonly rpc: ReadonlyMap<string, string>;
}

const NO_VIEW: GroupView = { leader: "", peers: [], names: new Map(), rpc: new Map() };
// Kafka's limit on topic names (Topic.java).
const MAX_TOPIC_LENGTH = 249;

/**
 * Leader election through a Kafka consumer group: every server joins the
 * group `chronomad-leader.<topic>` on the one-partition topic
 * `<topic>.leader` (nothing is ever written to it), and the member assigned
 * its partition leads. The group coordinator moves the partition when the
 * leader leaves or stays silent for the session timeout, which bounds
 * failover. Each member's metadata carries its advertised HTTP address, so
 * every server can list its peers and name the leader after every
 * rebalance, without asking anyone else.
 *
 * A leader that is deposed without noticing (paused past its session) may
 * still act for a moment; the leadership epoch in the log fences its late
 * writes (projections/leadership.ts).
 */
export class KafkaLeadership implements Leadership {
  readonly exclusive = false;
  private readonly leading = new BehaviorSubject(false);
  readonly leader$: Observable<boolean> = this.leading.pipe(distinctUntilChanged());
  private readonly address: KafkaLogAddress;
  private readonly leaderTopic: string;
  private readonly groupId: string;
  private readonly kafka: Kafka;
  private readonly heartbeatMs: number;
  private consumer: Consumer | undefined;
  private advertised = "";
  private advertisedRpc = "";
  private view: GroupView = NO_VIEW;
  private viewSeq = 0;
  private contactAt = 0;
  private joinedAt = 0;
  private closed = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly firstJoin: Promise<void>;
  private joined: () => void = () => undefined;
  private refused: (err: Error) => void = () => undefined;
  private hasJoined = false;

  constructor(private readonly options: KafkaLeadershipOptions) {
    this.address = parseKafkaUrl(options.logUrl);
    this.leaderTopic = `${this.address.topic}.leader`;
    if (this.leaderTopic.length > MAX_TOPIC_LENGTH) {
      throw new LogError(
        `log topic ${this.address.topic} is too long to name its leader topic (${this.leaderTopic}); ` +
          `Kafka allows ${MAX_TOPIC_LENGTH} characters`,
        "config",
      );
    }
    this.groupId = `chronomad-leader.${this.address.topic}`;
    // A third of the session is Kafka's advice; a sixth lets survivors see a
    // rebalance sooner after the coordinator drops a dead leader.
    this.heartbeatMs = Math.max(100, Math.floor(options.sessionTimeoutMs / 6));
    this.kafka = new Kafka({
      ...options.client,
      clientId: `chronomad-leader-${options.serverName}`,
      brokers: [...this.address.brokers],
      logLevel: kafkajsLevel("warn"),
      logCreator: pinoLogCreator(options.logger),
    });
    this.firstJoin = new Promise<void>((resolve, reject) => {
      this.joined = () => {
        this.hasJoined = true;
        resolve();
      };
      this.refused = reject;
    });
    // Rejections after the first join are handled by the crash listener.
    this.firstJoin.catch(() => undefined);
  }

  /**
   * Joins the election, advertising `address`. Resolves once this server
   * knows the outcome of its first join (or after two session timeouts if
   * the group is slow to settle; the outcome then arrives later). Rejects
   * if the broker refuses to let it join at all (a session timeout outside
   * the broker's group.min/max.session.timeout.ms, missing ACLs).
   */
  async join(address: string, rpcAddress = ""): Promise<void> {
    this.advertised = address;
    this.advertisedRpc = rpcAddress;
    this.joinedAt = Date.now();
    await this.ensureLeaderTopic();
    await this.startConsumer();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), 2 * this.options.sessionTimeoutMs);
    });
    const outcome = await Promise.race([this.firstJoin, late]);
    clearTimeout(timer);
    if (outcome === "late")
      this.options.logger.warn("leader election has not settled yet; serving meanwhile");
  }

  isLeader(): boolean {
    return this.leading.value;
  }

  leaderAddress(): string {
    return this.leading.value ? this.advertised : this.view.leader;
  }

  peers(): readonly string[] {
    if (this.view.peers.length === 0) return this.advertised ? [this.advertised] : [];
    return this.view.peers;
  }

  members(): readonly ServerMember[] {
    const leader = this.leaderAddress();
    return this.peers().map((address) => ({
      name: this.view.names.get(address) ?? (address === this.advertised ? this.options.serverName : address),
      address,
      rpcAddress: address === this.advertised ? this.advertisedRpc : (this.view.rpc.get(address) ?? ""),
      leader: address === leader,
      self: address === this.advertised,
    }));
  }

  lastContactMs(): number {
    if (this.leading.value) return 0;
    return Date.now() - (this.contactAt || this.joinedAt || Date.now());
  }

  /** Leaves the group, so another server takes over at once instead of after the session timeout. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.restartTimer);
    this.leading.next(false);
    this.joined();
    await this.consumer?.disconnect().catch(() => undefined);
    this.leading.complete();
  }

  private async ensureLeaderTopic(): Promise<void> {
    const admin: Admin = this.kafka.admin();
    try {
      await admin.connect();
      if ((await admin.listTopics()).includes(this.leaderTopic)) return;
      // Resolves false when another server created it in between: fine.
      await admin.createTopics({
        waitForLeaders: true,
        topics: [
          {
            topic: this.leaderTopic,
            numPartitions: 1,
            replicationFactor: this.address.replicationFactor,
          },
        ],
      });
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  private async startConsumer(): Promise<void> {
    const consumer = this.kafka.consumer({
      groupId: this.groupId,
      partitionAssigners: [
        leaderAssigner(this.leaderTopic, () => ({
          address: this.advertised,
          rpc: this.advertisedRpc,
          server: this.options.serverName,
          epoch: this.options.heldEpoch(),
          leading: this.leading.value,
        })),
      ],
      sessionTimeout: this.options.sessionTimeoutMs,
      // Survivors must rejoin within this after a rebalance starts; short,
      // so one stuck member cannot hold up the election for long.
      rebalanceTimeout: Math.max(this.options.sessionTimeoutMs, 5_000),
      heartbeatInterval: this.heartbeatMs,
      // A member with nothing assigned sleeps this long between heartbeats:
      // it bounds how late a follower notices a rebalance.
      maxWaitTimeInMs: Math.min(this.heartbeatMs, 500),
      allowAutoTopicCreation: false,
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, (event) => {
      const assignment: Record<string, number[] | undefined> = event.payload.memberAssignment;
      const leads = assignment[this.leaderTopic]?.includes(0) ?? false;
      this.contactAt = Date.now();
      if (leads !== this.leading.value || !this.hasJoined) {
        this.options.logger.info(
          { leader: leads, member: event.payload.memberId },
          leads ? "elected leader" : "following",
        );
      }
      // Until the members are read again, the leader is unknown rather than
      // this server, if it just lost the partition.
      if (!leads && this.view.leader === this.advertised) this.view = { ...this.view, leader: "" };
      this.leading.next(leads);
      this.joined();
      void this.refreshView(consumer);
    });
    consumer.on(consumer.events.HEARTBEAT, () => {
      this.contactAt = Date.now();
    });
    consumer.on(consumer.events.CRASH, (event) => {
      if (this.closed || this.consumer !== consumer) return;
      // Without the coordinator this server cannot know it still leads.
      this.leading.next(false);
      this.view = { ...this.view, leader: "" };
      this.options.logger.warn(
        { err: event.payload.error, restart: event.payload.restart },
        "leader election consumer failed",
      );
      if (event.payload.restart) return;
      if (!this.hasJoined) {
        const reason =
          event.payload.error instanceof Error ? event.payload.error.message : String(event.payload.error);
        this.refused(
          new LogError(
            `cannot join the leader election on ${this.leaderTopic}: ${reason} ` +
              `(leader_session_timeout is ${this.options.sessionTimeoutMs} ms)`,
            "config",
          ),
        );
        return;
      }
      this.scheduleRestart();
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [this.leaderTopic], fromBeginning: false });
    await consumer.run({ autoCommit: false, eachBatch: async () => undefined });
  }

  /** kafkajs gives up on errors it deems fatal; an election must not. */
  private scheduleRestart(): void {
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      if (this.closed) return;
      void (this.consumer?.disconnect() ?? Promise.resolve())
        .catch(() => undefined)
        .then(() => (this.closed ? undefined : this.startConsumer()))
        .catch((err: unknown) => {
          this.options.logger.error({ err }, "cannot rejoin the leader election; retrying");
          this.scheduleRestart();
        });
    }, this.options.sessionTimeoutMs);
  }

  /**
   * Reads every member's address and assignment from the coordinator. Only
   * a stable generation carries them; if another rebalance has begun, its
   * own GROUP_JOIN will refresh again.
   */
  private async refreshView(consumer: Consumer): Promise<void> {
    const seq = ++this.viewSeq;
    try {
      const group = await consumer.describeGroup();
      if (seq !== this.viewSeq || group.state !== "Stable" || group.protocol !== LEADER_ASSIGNER) return;
      let leader = "";
      const peers = new Set<string>();
      const names = new Map<string, string>();
      const rpc = new Map<string, string>();
      for (const m of group.members) {
        const claim = claimOfMetadata(m.memberMetadata);
        if (!claim) continue;
        peers.add(claim.address);
        names.set(claim.address, claim.server);
        if (claim.rpc) rpc.set(claim.address, claim.rpc);
        if (assignmentLeads(m.memberAssignment, this.leaderTopic)) leader = claim.address;
      }
      this.view = { leader, peers: [...peers].sort(), names, rpc };
    } catch (err) {
      if (seq === this.viewSeq) this.options.logger.warn({ err }, "cannot read the leader group's members");
    }
  }
}
