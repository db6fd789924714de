import { afterEach, describe, expect, it } from "vitest";
import { type AclServer, startAclServer } from "../../acl/acl-fixtures.ts";
import type { TestServer } from "../../server-harness.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

async function start(): Promise<AclServer> {
  const acl = await startAclServer();
  running.push(acl.s);
  await acl.policy("readers", `namespace "default" { policy = "read" }`);
  return acl;
}

/** Reads the stream's NDJSON lines until one satisfies `until` or the server ends it; answers every line but heartbeats. */
async function readLines(res: Response, until: (line: Record<string, unknown>) => boolean) {
  const lines: Record<string, unknown>[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let partial = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { lines, ended: true };
    partial += decoder.decode(value, { stream: true });
    const parts = partial.split("\n");
    partial = parts.pop()!;
    for (const part of parts) {
      if (part === "" || part === "{}") continue;
      const line = JSON.parse(part) as Record<string, unknown>;
      lines.push(line);
      if (until(line)) {
        await reader.cancel();
        return { lines, ended: false };
      }
    }
  }
}

describe("GET /v1/event/stream under ACLs", () => {
  it("checks each topic asked for as Nomad does: read-job for job topics, node read for Node, management for all", async () => {
    const acl = await start();
    const reader = await acl.token(["readers"]);
    const statuses: Record<string, number> = {};
    for (const query of [
      "topic=Evaluation",
      "topic=Job:web",
      "topic=Node",
      "topic=*",
      "",
      "topic=Evaluation&namespace=other",
    ]) {
      const res = await acl.call(reader.SecretID, `/v1/event/stream?${query}`);
      statuses[query] = res.status;
      await res.body?.cancel();
    }
    expect(statuses).toEqual({
      "topic=Evaluation": 200,
      "topic=Job:web": 200,
      "topic=Node": 403,
      "topic=*": 403,
      "": 403,
      "topic=Evaluation&namespace=other": 403,
    });
    const all = await acl.call(acl.root.SecretID, "/v1/event/stream");
    expect(all.status).toBe(200);
    await all.body?.cancel();
  });

  it("ends a subscriber's stream with an error frame when its token is deleted", async () => {
    const acl = await start();
    const reader = await acl.token(["readers"]);
    const res = await acl.call(reader.SecretID, "/v1/event/stream?topic=Job");
    expect(res.status).toBe(200);
    const reading = readLines(res, (line) => typeof line.Error === "string");
    await acl.write(`/v1/acl/token/${reader.AccessorID}`, undefined, "DELETE");
    const { lines } = await reading;
    expect(lines.at(-1)).toEqual({ Error: "ACL token deleted" });
  });
});
