import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { historyKey } from "../../../projections/history.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";

const KEYS = "/v1/operator/keyring/keys";
const ROTATE = "/v1/operator/keyring/rotate";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface KeyMeta {
  KeyID: string;
  State: string;
  CreateIndex: number;
  ModifyIndex: number;
}

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
  const list = async (s: TestServer) => (await (await s.call(KEYS)).json()) as KeyMeta[];
  const stateOf = async (s: TestServer) => Object.fromEntries((await list(s)).map((k) => [k.KeyID, k.State]));
  const keystoreFiles = async (s: TestServer) =>
    (await readdir(join(s.dataDir, "server", "keystore"))).sort();

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

  it("rotates: a new active key, kept before it is written, answering Nomad's KeyringRotateRootKeyResponse", async () => {
    const s = await start();
    const [first] = await list(s);
    for (const [method, query] of [
      ["PUT", ""],
      ["POST", "?algo=aes256-gcm"],
    ] as const) {
      const res = await s.call(`${ROTATE}${query}`, { method });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { Key: KeyMeta & Record<string, unknown>; Index: number };
      expect(Object.keys(body).sort()).toEqual(["Index", "Key"]);
      expect(body.Key).toMatchObject({ Algorithm: "aes256-gcm", State: "active", PublishTime: 0 });
      expect(body.Key.KeyID).toMatch(UUID);
      expect(body.Key.CreateIndex).toBe(body.Index);
      expect(res.headers.get("x-nomad-index")).toBe(String(body.Index));
      expect(s.keyring.has(body.Key.KeyID)).toBe(true);
      expect(await keystoreFiles(s)).toContain(`${body.Key.KeyID}.nks.json`);
    }
    const keys = await list(s);
    expect(keys).toHaveLength(3);
    expect(keys.filter((k) => k.State === "active")).toHaveLength(1);
    // A plain rotation: the previous keys are inactive, not rekeying.
    expect(keys.find((k) => k.KeyID === first!.KeyID)?.State).toBe("inactive");
  });

  it("refuses an unknown algorithm or a malformed full, and writes nothing", async () => {
    const s = await start();
    const before = s.log.lastIndex();
    const algo = await s.call(`${ROTATE}?algo=rot13`, { method: "PUT" });
    expect(algo.status).toBe(400);
    expect(await algo.text()).toBe('unsupported root key algorithm "rot13": the only one is aes256-gcm');
    const full = await s.call(`${ROTATE}?full=maybe`, { method: "PUT" });
    expect(full.status).toBe(400);
    expect(await full.text()).toMatch(/^invalid full parameter "maybe"/);
    expect(s.log.lastIndex()).toBe(before);
    expect(await list(s)).toHaveLength(1);
  });

  it("refuses to delete the active key with Nomad's words, and a missing key is a no-op", async () => {
    const s = await start();
    const before = s.log.lastIndex();
    const [active] = await list(s);
    const refused = await s.call(`/v1/operator/keyring/key/${active!.KeyID}`, { method: "DELETE" });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toBe("active root key cannot be deleted - call rotate first");
    // Nomad's IDs are matched lowercased.
    const upper = await s.call(`/v1/operator/keyring/key/${active!.KeyID.toUpperCase()}`, {
      method: "DELETE",
    });
    expect(upper.status).toBe(400);
    const missing = await s.call("/v1/operator/keyring/key/6c4f0b2d-3e5a-4f7b-9c8d-0e1f2a3b4c5d", {
      method: "DELETE",
    });
    expect(missing.status).toBe(200);
    expect(await missing.json()).toEqual({ Index: 0 });
    expect(s.log.lastIndex()).toBe(before);
    expect(s.keyring.has(active!.KeyID)).toBe(true);
  });

  it("deletes an inactive key: gone from the list, the keyring and the keystore, and audited with its actor", async () => {
    const s = await start();
    const [old] = await list(s);
    expect((await s.call(ROTATE, { method: "PUT" })).status).toBe(200);
    const res = await s.call(`/v1/operator/keyring/key/${old!.KeyID}?force=true`, { method: "DELETE" });
    expect(res.status).toBe(200);
    const { Index } = (await res.json()) as { Index: number };
    expect(res.headers.get("x-nomad-index")).toBe(String(Index));
    expect((await list(s)).map((k) => k.KeyID)).not.toContain(old!.KeyID);
    await expect.poll(() => s.keyring.has(old!.KeyID)).toBe(false);
    await expect.poll(() => keystoreFiles(s)).not.toContain(`${old!.KeyID}.nks.json`);
    const history = s.history.entries(historyKey("root_key", old!.KeyID));
    expect(history.map((e) => [e.Field, e.To])).toEqual([
      ["(created)", { State: "active", Algorithm: "aes256-gcm" }],
      ["State", "inactive"],
      ["(deleted)", null],
    ]);
    // Created by the leader, retired by a rotation and deleted by API callers.
    expect(history[0]!.Actor).toMatchObject({ kind: "server" });
    expect(history[2]!.Actor).toMatchObject({ kind: "remote" });
  });

  it("refuses a rotation while a full rekey still runs, and writes nothing", async () => {
    const s = await start();
    const [first] = await list(s);
    const put = await s.call("/v1/var/app/config", {
      method: "PUT",
      body: JSON.stringify({ Items: { a: "1" } }),
    });
    expect(put.status).toBe(200);
    // Without the old key's material the leader cannot re-encrypt: the rekey stays running.
    s.keyring.delete(first!.KeyID);
    const full = await s.call(`${ROTATE}?full`, { method: "PUT" });
    expect(full.status).toBe(200);
    await expect.poll(() => stateOf(s)).toMatchObject({ [first!.KeyID]: "rekeying" });
    const before = s.log.lastIndex();
    const refused = await s.call(ROTATE, { method: "PUT" });
    expect(refused.status).toBe(409);
    expect(await refused.text()).toBe(
      `cannot rotate the keyring while a full rekey is running: root key ${first!.KeyID} is still rekeying ` +
        "(the leader logs its progress); rotate again once the rekey is done",
    );
    expect(s.log.lastIndex()).toBe(before);
    expect(await list(s)).toHaveLength(2);
  });

  it("needs a management token for rotation and deletion", async () => {
    const s = await start(["--acl-enabled"]);
    const boot = await s.call("/v1/acl/bootstrap", { method: "POST" });
    const { SecretID } = (await boot.json()) as { SecretID: string };
    const before = s.log.lastIndex();
    expect((await s.call(ROTATE, { method: "PUT" })).status).toBe(403);
    expect((await s.call("/v1/operator/keyring/key/x", { method: "DELETE" })).status).toBe(403);
    expect(s.log.lastIndex()).toBe(before);
    const ok = await s.call(ROTATE, { method: "PUT", headers: { "X-Nomad-Token": SecretID } });
    expect(ok.status).toBe(200);
  });

  it("reads force with Go's ParseBool, answering Nomad's 422 otherwise", async () => {
    const s = await start();
    const bad = await s.call("/v1/operator/keyring/key/x?force=yes", { method: "DELETE" });
    expect(bad.status).toBe(422);
    expect(await bad.text()).toBe("invalid force parameter");
    const ok = await s.call("/v1/operator/keyring/key/x?force=F", { method: "DELETE" });
    expect(ok.status).toBe(200);
  });

  it("answers other methods 405, as Nomad", async () => {
    const s = await start();
    expect((await s.call(KEYS, { method: "PUT" })).status).toBe(405);
    expect((await s.call(ROTATE)).status).toBe(405);
    expect((await s.call("/v1/operator/keyring/key/x")).status).toBe(405);
  });
});
