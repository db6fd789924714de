import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { TestNode } from "../node-fixtures.ts";
import { readStream } from "./event-stream-client.ts";

const running: TestServer[] = [];
async function start() {
  const s = await startTestServer();
  running.push(s);
  return s;
}
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

describe("GET /v1/event/stream, as Nomad's clients use it", () => {
  it("refuses a malformed topic with Nomad's text", async () => {
    const s = await start();
    // What the Go client sends for map[Topic][]string{TopicEvaluation: {"::*"}}.
    const bad = await readStream(
      `${s.url}/v1/event/stream?topic=${encodeURIComponent("Evaluation:::*")}`,
      () => true,
    );
    expect(bad.status).toBe(400);
    expect(bad.text).toBe(
      "Invalid topic query: error parsing topics: Invalid key value pair for topic, topic: Evaluation:::*",
    );
    const unknown = await readStream(`${s.url}/v1/event/stream?topic=Nodes`, () => true);
    expect(unknown.status).toBe(400);
    expect(unknown.text).toMatch(/^Invalid topic query: unknown topic "Nodes"/);
  });

  it("accepts Nomad's topics it has no events for yet", async () => {
    const s = await start();
    const topics = [
      "Service",
      "NodePool",
      "ACLToken",
      "ACLPolicy",
      "ACLRole",
      "ACLAuthMethod",
      "ACLBindingRule",
    ];
    const query = topics.map((t) => `topic=${t}`).join("&");
    // The first chunk is the `{}` heartbeat: the stream is open.
    const res = await readStream(`${s.url}/v1/event/stream?${query}`, () => true);
    expect(res.status, res.text).toBe(200);
  });

  it("publishes eligibility changes as Node events of type NodeEligibility, with an empty SecretID", async () => {
    const s = await start();
    const node = new TestNode(s);
    expect((await node.register()).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    const res = await s.call(`/v1/node/${node.id}/eligibility`, {
      method: "PUT",
      body: JSON.stringify({ Eligibility: "ineligible" }),
    });
    expect(res.status).toBe(200);
    const { frames } = await readStream(`${s.url}/v1/event/stream?index=0&topic=Node`, (f) =>
      f.some((x) => x.Events?.some((e) => e.Type === "NodeEligibility")),
    );
    const events = frames.flatMap((f) => f.Events ?? []);
    expect(events.map((e) => e.Type)).toEqual(["NodeRegistration", "NodeStreamEvent", "NodeEligibility"]);
    const eligibility = events.at(-1)!;
    expect(eligibility).toMatchObject({ Topic: "Node", Key: node.id });
    for (const e of events) {
      const payload = e.Payload.Node as Record<string, unknown>;
      expect(payload.SecretID).toBe("");
      expect(JSON.stringify(e)).not.toContain(node.secret);
    }
    expect((eligibility.Payload.Node as { SchedulingEligibility: string }).SchedulingEligibility).toBe(
      "ineligible",
    );
  });
});
