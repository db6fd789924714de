import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadConfig, splitHostPort } from "../src/config.ts";
import { parseEsdbUrl } from "../src/log/esdb/esdb-url.ts";
import { parseKafkaUrl } from "../src/log/kafka/kafka-url.ts";

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  ports?: string[];
  environment?: Record<string, string | number>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
}

const root = join(import.meta.dirname, "..");

// There is no Docker engine where the tests run: the file is checked against
// the code's own configuration parsing instead of being started.
describe("docker-compose.yml", async () => {
  const compose = parse(await readFile(join(root, "docker-compose.yml"), "utf8"), { merge: true }) as {
    services: Record<string, Service>;
  };
  const env = (s: Service) =>
    Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, String(v)]));
  const servers = Object.entries(compose.services).filter(([name]) => name.startsWith("chronomad-"));
  // The Kafka cluster's servers; chronomad-esdb runs alone on EventStoreDB.
  const chronomads = servers.filter(([, s]) => env(s).CHRONOMAD_LOG?.startsWith("kafka://"));
  const kafka = compose.services.kafka!;
  const eventstore = compose.services.eventstore!;
  const esdbServer = compose.services["chronomad-esdb"]!;

  it("runs three chronomad servers, Kafka in KRaft mode and an insecure EventStoreDB node", () => {
    expect(chronomads.length).toBe(3);
    expect(kafka.image).toMatch(/^apache\/kafka:3\.9/);
    expect(env(kafka).KAFKA_PROCESS_ROLES).toBe("broker,controller");
    expect(env(compose.services.eventstore!)).toMatchObject({
      EVENTSTORE_INSECURE: "true",
      EVENTSTORE_CLUSTER_SIZE: "1",
    });
  });

  for (const [name, service] of chronomads) {
    it(`${name}: its command and environment are a valid configuration that agrees with its ports`, async () => {
      const [sub, ...args] = service.command!;
      expect(sub).toBe("serve");
      const config = await loadConfig(args, env(service));
      expect(config.serverName).toBe(name);
      expect(config.dataDir).toBe("/data");
      const { port } = splitHostPort(config.httpAddr);
      expect(service.ports!.some((p) => p.endsWith(`:${port}`))).toBe(true);

      const url = parseKafkaUrl(config.log);
      const advertised = env(kafka)
        .KAFKA_ADVERTISED_LISTENERS!.split(",")
        .map((l) => l.replace(/^\w+:\/\//, ""));
      for (const broker of url.brokers) expect(advertised).toContain(broker);
    });
  }

  it("gives every server its own host port and data volume, and one shared topic", () => {
    const hostPorts = servers.map(([, s]) => s.ports![0]!.split(":")[0]);
    expect(new Set(hostPorts).size).toBe(4);
    expect(new Set(servers.map(([, s]) => s.volumes![0]!.split(":")[0])).size).toBe(4);
    expect(new Set(chronomads.map(([, s]) => env(s).CHRONOMAD_LOG)).size).toBe(1);
  });

  it("runs EventStoreDB 24.10 insecure on 2113 with a health check", () => {
    expect(eventstore.image).toBe("eventstore/eventstore:24.10");
    expect(eventstore.ports).toContain("2113:2113");
    expect(env(eventstore)).toMatchObject({ EVENTSTORE_INSECURE: "true", EVENTSTORE_NODE_PORT: "2113" });
    expect(eventstore.healthcheck!.test.join(" ")).toMatch(/http:\/\/localhost:2113\/health\/live/);
  });

  it("points one chronomad server, started once EventStoreDB is healthy, at its default stream", async () => {
    const [sub, ...args] = esdbServer.command!;
    expect(sub).toBe("serve");
    const config = await loadConfig(args, env(esdbServer));
    expect(config.log).toBe("esdb://eventstore:2113?tls=false");
    expect(config.serverName).toBe("chronomad-esdb");
    const { port } = splitHostPort(config.httpAddr);
    expect(esdbServer.ports!.some((p) => p.endsWith(`:${port}`))).toBe(true);
    const address = parseEsdbUrl(config.log);
    expect(address.connectionString).toBe("esdb://eventstore:2113?tls=false");
    expect(address.stream).toBe("chronomad-global");
    expect(esdbServer.depends_on).toEqual({ eventstore: { condition: "service_healthy" } });
    // One server on the stream in this file (more could share it, under the lease election).
    expect(servers.filter(([, s]) => env(s).CHRONOMAD_LOG?.startsWith("esdb://")).length).toBe(1);
  });

  it("builds an image whose entrypoint is the chronomad command", async () => {
    const dockerfile = await readFile(join(root, "Dockerfile"), "utf8");
    expect(dockerfile).toMatch(/ENTRYPOINT \["node", "--max-semi-space-size=32", "bin\/chronomad.js"\]/);
    for (const dir of ["bin", "src", "streams", "projections"])
      expect(dockerfile).toContain(`COPY ${dir} ./${dir}`);
  });
});
