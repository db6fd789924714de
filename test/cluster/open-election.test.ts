import { hostname } from "node:os";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { EsdbLeadership } from "../../src/cluster/esdb-leadership.ts";
import { KafkaLeadership } from "../../src/cluster/kafka-leadership.ts";
import { advertisedAddress, openElection } from "../../src/cluster/open-election.ts";
import { loadConfig } from "../../src/config.ts";

const logger = pino({ level: "silent" });

describe("openElection", () => {
  it("elects through Kafka only for a kafka:// log; a server alone on its log leads itself", async () => {
    const kafka = await loadConfig(["--log", "kafka://127.0.0.1:9092/events"], {});
    const election = await openElection(kafka, logger, () => 0);
    expect(election).toBeInstanceOf(KafkaLeadership);
    expect(election.exclusive).toBe(false);
    // Not joined yet: no leader known, and no peer but itself once it has an address.
    expect(election.leaderAddress()).toBe("");
    expect(election.isLeader()).toBe(false);

    const file = await openElection(
      await loadConfig(["--log", "memory:", "--server-name", "solo"], {}),
      logger,
      () => 0,
    );
    expect(file.exclusive).toBe(true);
    await file.join("127.0.0.1:4646", "127.0.0.1:4647");
    expect(file.isLeader()).toBe(true);
    expect(file.leaderAddress()).toBe("127.0.0.1:4646");
    expect(file.peers()).toEqual(["127.0.0.1:4646"]);
    expect(file.members?.()).toEqual([
      { name: "solo", address: "127.0.0.1:4646", rpcAddress: "127.0.0.1:4647", leader: true, self: true },
    ]);
  });

  it("elects through a lease beside the stream for an esdb:// log", async () => {
    const config = await loadConfig(["--log", "esdb://127.0.0.1:2113?tls=false"], {});
    const election = await openElection(config, logger, () => 0);
    expect(election).toBeInstanceOf(EsdbLeadership);
    expect(election.exclusive).toBe(false);
    // Not joined yet: no leader known, and this server does not lead.
    expect(election.isLeader()).toBe(false);
    expect(election.leaderAddress()).toBe("");
    await election.close();
  });

  it("refuses a log topic too long to name its leader topic", async () => {
    const config = await loadConfig(["--log", `kafka://127.0.0.1:9092/${"t".repeat(245)}`], {});
    await expect(openElection(config, logger, () => 0)).rejects.toThrow(/too long to name its leader topic/);
  });
});

describe("advertisedAddress", () => {
  it("prefers advertise_addr, else the bound address, with the host name for an unspecified one", async () => {
    const plain = await loadConfig(["--http-addr", "0.0.0.0:4646"], {});
    expect(advertisedAddress(plain, { address: "127.0.0.1", family: "IPv4", port: 4646 })).toBe(
      "127.0.0.1:4646",
    );
    expect(advertisedAddress(plain, { address: "::1", family: "IPv6", port: 4646 })).toBe("[::1]:4646");
    expect(advertisedAddress(plain, { address: "0.0.0.0", family: "IPv4", port: 4646 })).toBe(
      `${hostname()}:4646`,
    );
    const set = await loadConfig(["--advertise-addr", "chronomad-1:4646"], {});
    expect(advertisedAddress(set, { address: "0.0.0.0", family: "IPv4", port: 4646 })).toBe(
      "chronomad-1:4646",
    );
    await expect(loadConfig(["--advertise-addr", "nope"], {})).rejects.toThrow(
      /advertise_addr must be host:port/,
    );
    expect((await loadConfig(["--leader-session-timeout", "10s"], {})).leaderSessionTimeout).toBe(10_000);
  });
});
