import { afterEach, describe, expect, it } from "vitest";
import type { HistoryEntry } from "../../projections/history.ts";
import { MAX_USER_AGENT } from "../../streams/event-schema.ts";
import { startAclServer } from "../acl/acl-fixtures.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { TestNode } from "./node-fixtures.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

const job = (count: number, image = "nginx:1") => ({
  ID: "web",
  Type: "service",
  Datacenters: ["dc1"],
  TaskGroups: [
    {
      Name: "web",
      Count: count,
      Tasks: [
        { Name: "server", Driver: "docker", Config: { image }, Resources: { CPU: 500, MemoryMB: 256 } },
      ],
    },
  ],
});

async function send(
  s: TestServer,
  path: string,
  method: string,
  body: unknown,
  headers: Record<string, string>,
) {
  const res = await s.call(path, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return res;
}

async function historyOf(s: TestServer, path: string, headers: Record<string, string> = {}) {
  const res = await s.call(path, { headers });
  expect(res.status).toBe(200);
  return (await res.json()) as HistoryEntry[];
}

describe("who made a change", () => {
  it("records an API caller by address and user agent when ACLs are off", async () => {
    const s = await startTestServer();
    running.push(s);
    const agent = { "user-agent": "audit-test/1.0" };
    await send(s, "/v1/jobs", "PUT", { Job: job(1) }, agent);
    await send(s, "/v1/jobs", "PUT", { Job: job(2, "nginx:2") }, agent);

    const history = await historyOf(s, "/v1/job/web/history");
    const remote = { kind: "remote", id: "127.0.0.1", addr: "127.0.0.1", userAgent: "audit-test/1.0" };
    expect(history[0]).toMatchObject({ Field: "(created)", Actor: remote });
    const version = history.find((h) => h.Field === "Version")!;
    expect(version).toMatchObject({ From: 0, To: 1, Actor: remote });
    // The version's entry carries what changed.
    expect(version.Diff).toMatchObject({
      Type: "Edited",
      TaskGroups: [
        {
          Name: "web",
          Fields: [{ Name: "Count", Old: "1", New: "2" }],
          Tasks: [
            { Name: "server", Objects: [{ Name: "Config", Fields: [{ Name: "image", New: "nginx:2" }] }] },
          ],
        },
      ],
    });

    // A node drain: the node itself registered (its actor), the operator drained it.
    const node = new TestNode(s);
    expect((await node.register()).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    const long = "x".repeat(MAX_USER_AGENT + 100);
    await send(
      s,
      `/v1/node/${node.id}/drain`,
      "PUT",
      { DrainSpec: { Deadline: 60e9 }, Meta: { message: "maintenance" } },
      { "user-agent": long },
    );
    const nodeHistory = await historyOf(s, `/v1/node/${node.id}/history`);
    // Client RPCs are the node's own, wherever they come from.
    expect(nodeHistory[0]!.Actor).toEqual({ kind: "node", id: node.id, name: node.name });
    expect(nodeHistory.find((h) => h.Field === "Status" && h.To === "ready")!.Actor).toEqual({
      kind: "node",
      id: node.id,
      name: node.name,
    });
    const drain = nodeHistory.find((h) => h.Field === "DrainStrategy")!;
    expect(drain.Actor).toEqual({
      kind: "remote",
      id: "127.0.0.1",
      addr: "127.0.0.1",
      userAgent: long.slice(0, MAX_USER_AGENT),
    });
    expect(drain.To).toMatchObject({ Deadline: 60e9, Meta: { message: "maintenance" } });
  });

  it("records the token, and where its caller was, when ACLs are on", async () => {
    const acl = await startAclServer();
    running.push(acl.s);
    const s = acl.s;
    const auth = { "X-Nomad-Token": acl.root.SecretID, "user-agent": "nomad-cli/1.6.1" };
    await send(s, "/v1/jobs", "PUT", { Job: job(1) }, auth);
    const history = await historyOf(s, "/v1/job/web/history", auth);
    expect(history[0]!.Actor).toEqual({
      kind: "token",
      id: acl.root.AccessorID,
      name: acl.root.Name,
      addr: "127.0.0.1",
      userAgent: "nomad-cli/1.6.1",
    });

    // The anonymous token, given the right to drain nodes.
    await acl.policy("anonymous", 'node { policy = "write" }');
    const node = new TestNode(s);
    expect((await node.register()).status).toBe(200);
    await send(
      s,
      `/v1/node/${node.id}/drain`,
      "PUT",
      { DrainSpec: { Deadline: 60e9 } },
      { "user-agent": "curl/8" },
    );
    const nodeHistory = await historyOf(s, `/v1/node/${node.id}/history`, auth);
    expect(nodeHistory.find((h) => h.Field === "DrainStrategy")!.Actor).toEqual({
      kind: "anonymous",
      id: "anonymous",
      addr: "127.0.0.1",
      userAgent: "curl/8",
    });
  });
});
