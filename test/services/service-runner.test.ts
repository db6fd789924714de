import { pino } from "pino";
import { BehaviorSubject } from "rxjs";
import { afterEach, describe, expect, it } from "vitest";
import { createProjections } from "../../projections/index.ts";
import { currentLeadership } from "../../projections/leadership.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { loadConfig } from "../../src/config.ts";
import type { Leadership } from "../../src/leadership.ts";
import { MemoryLog } from "../../src/log/memory-log.ts";
import type { LeaderService, ServiceContext } from "../../src/services/service.ts";
import { ServiceRunner } from "../../src/services/service-runner.ts";
import { Store } from "../../src/store/store.ts";
import { systemClock } from "../../src/util/clock.ts";
import { allSchemas } from "../../streams/index.ts";
import { eventually } from "../cluster/eventually.ts";

const logger = pino({ level: "silent" });
const codec = new EnvelopeCodec(allSchemas);

/** An election the test decides. */
class ManualLeadership implements Leadership {
  readonly leading = new BehaviorSubject(false);
  readonly leader$ = this.leading.asObservable();
  isLeader = () => this.leading.value;
  leaderAddress = () => "";
  peers = () => [];
  lastContactMs = () => 0;
}

/** Records what the runner does with it; keeps the write function it was given. */
class Probe implements LeaderService {
  readonly name = "probe";
  starts: { failover: boolean; leaderAtStart: string | undefined }[] = [];
  stops = 0;
  ctx: ServiceContext | undefined;
  get running() {
    return this.starts.length > this.stops;
  }
  start(ctx: ServiceContext): void {
    this.ctx = ctx;
    this.starts.push({
      failover: ctx.failover,
      leaderAtStart: currentLeadership(ctx.tables.leadership)?.ServerName,
    });
  }
  async stop(): Promise<void> {
    this.stops++;
  }
}

const namespace = (Name: string) => ({
  type: "NamespaceUpserted",
  v: 1,
  data: { Namespace: { Name, Description: "", Quota: "", Meta: null, Capabilities: null } },
});

describe("ServiceRunner", () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  async function server(log: MemoryLog, name: string, options: { resumeOwnEpoch?: boolean } = {}) {
    const projections = createProjections();
    const store = new Store({ log, codec, projections: projections.all, logger });
    await store.start();
    const config = await loadConfig(["--server-name", name, "--log", "memory:"], {});
    const probe = new Probe();
    const election = new ManualLeadership();
    const runner = new ServiceRunner(
      [probe],
      {
        config,
        store,
        tables: projections.tables,
        clock: systemClock,
        logger,
        actor: { kind: "server", id: name },
      },
      logger,
      { reclaimAfterMs: 20, ...options },
    );
    await runner.attach(election, `${name}:4646`);
    cleanup.push(async () => {
      await runner.close();
      await store.stop();
    });
    return { store, tables: projections.tables, probe, election, runner };
  }

  it("starts the services only once this server's claim is applied, and stamps their writes with its epoch", async () => {
    const log = new MemoryLog();
    const a = await server(log, "a");
    expect(a.probe.starts).toEqual([]);
    a.election.leading.next(true);
    await eventually(() => expect(a.probe.running).toBe(true));
    // The first leader a log ever had is no failover.
    expect(a.probe.starts).toEqual([{ failover: false, leaderAtStart: "a" }]);
    expect(a.runner.heldEpoch).toBe(1);
    const { index } = await a.probe.ctx!.write([namespace("web")]);
    expect(a.tables.namespaces.has("web")).toBe(true);
    // The epoch is in the log, for every server and every replay to check.
    for await (const [record] of log.read(index, { untilIndex: index })) {
      expect(codec.decode(record!.bytes).by).toEqual({ kind: "server", id: "a", epoch: 1 });
    }
  });

  it("hands over: the next leader starts with failover, and the old one's late writes change nothing", async () => {
    const log = new MemoryLog();
    const a = await server(log, "a");
    const b = await server(log, "b");
    a.election.leading.next(true);
    await eventually(() => expect(a.probe.running).toBe(true));
    const lateWrite = a.probe.ctx!.write;

    a.election.leading.next(false);
    b.election.leading.next(true);
    await eventually(() => expect(b.probe.running).toBe(true));
    expect(a.probe.running).toBe(false);
    expect(b.probe.starts).toEqual([{ failover: true, leaderAtStart: "b" }]);
    expect(b.runner.heldEpoch).toBe(2);

    const late = await lateWrite([namespace("from-a")]);
    expect(late.outcomes[0]).toMatchObject({ status: "rejected", code: 409 });
    const fresh = await b.probe.ctx!.write([namespace("from-b")]);
    expect(fresh.outcomes[0]).toMatchObject({ status: "applied" });
    await a.store.caughtUp();
    for (const s of [a, b]) expect(s.tables.namespaces.has("from-a")).toBe(false);
    expect(a.store.hash()).toBe(b.store.hash());
  });

  it("stops the services when the log shows a later epoch, even before the election says so", async () => {
    const log = new MemoryLog();
    const a = await server(log, "a");
    const b = await server(log, "b");
    a.election.leading.next(true);
    await eventually(() => expect(a.probe.running).toBe(true));
    // Both elections say "leader" for a while (a has not noticed it lost).
    b.election.leading.next(true);
    await eventually(() => expect(b.probe.running).toBe(true));
    await a.store.caughtUp();
    expect(a.probe.stops).toBeGreaterThan(0);
    // Then a's election catches up: b is left running, alone, under the latest epoch.
    a.election.leading.next(false);
    await eventually(() => {
      expect(a.probe.running).toBe(false);
      expect(b.probe.running).toBe(true);
      expect(b.runner.heldEpoch).toBe(currentLeadership(b.tables.leadership)!.Epoch);
    });
  });

  it("resumes its own epoch after a restart where it is alone on its log", async () => {
    const log = new MemoryLog();
    const first = await server(log, "solo", { resumeOwnEpoch: true });
    first.election.leading.next(true);
    await eventually(() => expect(first.probe.running).toBe(true));
    await first.runner.close();
    const last = log.lastIndex();

    const again = await server(log, "solo", { resumeOwnEpoch: true });
    again.election.leading.next(true);
    await eventually(() => expect(again.probe.running).toBe(true));
    expect(log.lastIndex()).toBe(last);
    expect(again.runner.heldEpoch).toBe(1);
    expect(again.probe.starts).toEqual([{ failover: true, leaderAtStart: "solo" }]);
    expect((await again.probe.ctx!.write([namespace("still")])).outcomes[0]).toMatchObject({
      status: "applied",
    });
  });
});
