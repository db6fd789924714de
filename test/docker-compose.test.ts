import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadConfig, splitHostPort } from "../src/config.ts";
import { parseKafkaUrl } from "../src/log/kafka/kafka-url.ts";

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  ports?: string[];
  environment?: Record<string, string | number>;
}

const root = join(import.meta.dirname, "..");

// There is no Docker engine where the tests run: the file is checked against
// the code's own configuration parsing instead of being started.
describe("docker-compose.yml", async () => {
  const compose = parse(await readFile(join(root, "docker-compose.yml"), "utf8"), { merge: true }) as {
    services: Record<string, Service>;
  };
  const chronomads = Object.entries(compose.services).filter(([name]) => name.startsWith("chronomad-"));
  const kafka = compose.services.kafka!;
  const env = (s: Service) =>
    Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, String(v)]));

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
    const hostPorts = chronomads.map(([, s]) => s.ports![0]!.split(":")[0]);
    expect(new Set(hostPorts).size).toBe(3);
    expect(new Set(chronomads.map(([, s]) => env(s).CHRONOMAD_LOG)).size).toBe(1);
  });

  it("builds an image whose entrypoint is the chronomad command", async () => {
    const dockerfile = await readFile(join(root, "Dockerfile"), "utf8");
    expect(dockerfile).toMatch(/ENTRYPOINT \["node", "--max-semi-space-size=32", "bin\/chronomad.js"\]/);
    for (const dir of ["bin", "src", "streams", "projections"])
      expect(dockerfile).toContain(`COPY ${dir} ./${dir}`);
  });
});
