import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

const KEYS = "/v1/operator/keyring/keys";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("/v1/operator/keyring", () => {
  const running: TestServer[] = [];
  const start = async (args: string[] = []) => {
    const s = await startTestServer({ args });
    running.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop();
  });

  it("lists the key the leader created at start, as Nomad's RootKeyMeta and nothing more", async () => {
    const s = await start();
    const res = await s.call(KEYS);
    expect(res.status).toBe(200);
    const keys = (await res.json()) as Record<string, unknown>[];
    expect(keys).toHaveLength(1);
    const key = keys[0]!;
    expect(Object.keys(key).sort()).toEqual(
      ["Algorithm", "CreateIndex", "CreateTime", "KeyID", "ModifyIndex", "PublishTime", "State"].sort(),
    );
    expect(key.KeyID).toMatch(UUID);
    expect(key).toMatchObject({ Algorithm: "aes256-gcm", State: "active", PublishTime: 0 });
    // Unix nanoseconds, as Nomad's int64.
    expect(key.CreateTime as number).toBeGreaterThan(1e18);
    expect(key.ModifyIndex).toBe(key.CreateIndex);
    expect(res.headers.get("x-nomad-index")).toBe(String(key.CreateIndex));
  });

  it("answers a blocking list at its wait time with the unchanged index", async () => {
    const s = await start();
    const index = Number((await s.call(KEYS)).headers.get("x-nomad-index"));
    const res = await s.call(`${KEYS}?index=${index}&wait=50ms`);
    expect(res.status).toBe(200);
    expect(Number(res.headers.get("x-nomad-index"))).toBe(index);
  });

  it("refuses rotation and deletion, naming the issue that brings them, and writes nothing", async () => {
    const s = await start();
    const before = s.log.lastIndex();
    const [key] = (await (await s.call(KEYS)).json()) as { KeyID: string }[];
    for (const method of ["PUT", "POST"]) {
      const rotate = await s.call("/v1/operator/keyring/rotate?full=true", { method });
      expect(rotate.status).toBe(501);
      expect(await rotate.text()).toMatch(/keyring rotation is not implemented yet .*issue 18/);
    }
    const del = await s.call(`/v1/operator/keyring/key/${key!.KeyID}?force=true`, { method: "DELETE" });
    expect(del.status).toBe(501);
    expect(await del.text()).toMatch(/root key deletion is not implemented yet .*issue 18/);
    expect(s.log.lastIndex()).toBe(before);
  });

  it("reads force with Go's ParseBool, answering Nomad's 422 otherwise", async () => {
    const s = await start();
    const bad = await s.call("/v1/operator/keyring/key/x?force=yes", { method: "DELETE" });
    expect(bad.status).toBe(422);
    expect(await bad.text()).toBe("invalid force parameter");
    const ok = await s.call("/v1/operator/keyring/key/x?force=F", { method: "DELETE" });
    expect(ok.status).toBe(501);
  });

  it("answers other methods 405, as Nomad", async () => {
    const s = await start();
    expect((await s.call(KEYS, { method: "PUT" })).status).toBe(405);
    expect((await s.call("/v1/operator/keyring/rotate")).status).toBe(405);
    expect((await s.call("/v1/operator/keyring/key/x")).status).toBe(405);
  });
});
