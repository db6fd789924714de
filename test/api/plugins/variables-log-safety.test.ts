import { randomUUID } from "node:crypto";
import { cp, readFile, rm } from "node:fs/promises";
import { join, relative } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { HistoryRow } from "../../../projections/history.ts";
import { filesUnder } from "../../files-under.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { readStream } from "./event-stream-client.ts";
import { type VariableJson, variablesClient } from "./variables-fixtures.ts";

const running: TestServer[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/**
 * A variable's whole life with distinctive values: created, updated,
 * conflicted, deleted, and one left in place. Returns the plaintexts written
 * and the raw root key they were sealed with.
 */
async function variableHistory(s: TestServer) {
  const v = variablesClient(s);
  const canary = (n: number) => `plaintext-canary-${n}-${randomUUID()}`;
  const values = [canary(1), canary(2), canary(3), canary(4)];
  const itemKey = `item-key-canary-${randomUUID()}`;
  const first = (await (await v.set("app/config", { [itemKey]: values[0]! })).json()) as VariableJson;
  expect((await v.set("app/config", { [itemKey]: values[1]! }, `?cas=${first.ModifyIndex}`)).status).toBe(
    200,
  );
  expect((await v.set("app/config", { [itemKey]: values[2]! }, "?cas=0")).status).toBe(409);
  expect((await v.set("app/gone", { token: values[3]! })).status).toBe(200);
  expect((await v.del("app/gone")).status).toBe(204);
  const [key] = (await (await s.call("/v1/operator/keyring/keys")).json()) as { KeyID: string }[];
  const material = s.keyring.get(key!.KeyID);
  expect(material, "the leader holds the key it made").toBeDefined();
  return { plaintexts: [...values, itemKey], rootKey: material!.key, keyId: key!.KeyID };
}

describe("variables and the log", () => {
  it("leave no plaintext and no root key in any log segment, snapshot or other file of the data dir", async () => {
    const s = await startTestServer();
    running.push(s);
    const { plaintexts, rootKey } = await variableHistory(s);
    await s.close(); // writes the shutdown snapshot too
    const files = (await filesUnder(s.dataDir)).filter(
      // The keystore holds the key, wrapped: that is its purpose.
      (f) => !relative(s.dataDir, f).startsWith(join("server", "keystore")),
    );
    expect(files.some((f) => f.includes("snapshot"))).toBe(true);
    expect(files.length).toBeGreaterThan(1);
    const problems: string[] = [];
    for (const file of files) {
      const bytes = await readFile(file);
      for (const text of plaintexts) if (bytes.includes(text)) problems.push(`${text} in ${file}`);
      for (const [form, needle] of [
        ["raw", rootKey],
        ["base64", Buffer.from(rootKey.toString("base64"))],
        ["hex", Buffer.from(rootKey.toString("hex"))],
      ] as const) {
        if (bytes.includes(needle)) problems.push(`the root key (${form}) in ${file}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("publish metadata and the key ID on the Variable topic, never Data, and keep no Data in history", async () => {
    const s = await startTestServer();
    running.push(s);
    const { plaintexts, keyId } = await variableHistory(s);
    const last = s.store.appliedIndex;
    const { status, frames } = await readStream(`${s.url}/v1/event/stream?topic=Variable&index=0`, (f) =>
      f.some((x) => (x.Index ?? 0) >= last),
    );
    expect(status).toBe(200);
    const events = frames.flatMap((f) => f.Events ?? []);
    expect(events.map((e) => `${e.Type} ${e.Key}`)).toEqual([
      "VariableUpdated app/config",
      "VariableUpdated app/config",
      "VariableUpdated app/gone",
      "VariableDeleted app/gone",
    ]);
    for (const e of events) {
      expect(Object.keys(e.Payload)).toEqual(["Metadata"]);
      expect(Object.keys(e.Payload.Metadata as object).sort()).toEqual(
        ["CreateIndex", "CreateTime", "KeyID", "ModifyIndex", "ModifyTime", "Namespace", "Path"].sort(),
      );
      expect((e.Payload.Metadata as { KeyID: string }).KeyID).toBe(keyId);
    }
    const text = JSON.stringify(frames);
    for (const p of plaintexts) expect(text).not.toContain(p);

    const history = [...s.store.table<HistoryRow>("history").all()].filter((h) => h.Object === "variable");
    expect(history).toHaveLength(2);
    const recorded = JSON.stringify(history.map((h) => s.history.entries(h.Key)));
    expect(recorded).not.toContain('"Data"');
    expect(recorded).toContain(keyId);
    // The complete change feed carries the same payloads (and before-images).
    const complete = await readStream(`${s.url}/v1/event/stream?topic=Variable&changes=all&index=0`, (f) =>
      f.some((x) => (x.Index ?? 0) >= last),
    );
    expect(JSON.stringify(complete.frames)).not.toContain('"Data"');
  });

  it("on a server without the key (a log replayed without its keystore): the same state; lists, but reads and writes answer why not", async () => {
    const s = await startTestServer({ keepDir: true });
    running.push(s);
    const { keyId } = await variableHistory(s);
    const live = (await (await s.call("/v1/operator/state-hash")).json()) as { Index: number; Hash: string };
    await s.close();
    const copy = `${s.dataDir}-copy`;
    dirs.push(s.dataDir, copy);
    await cp(join(s.dataDir, "log"), join(copy, "log"), { recursive: true });
    const fresh = await startTestServer({ dataDir: copy });
    running.push(fresh);
    expect(fresh.keyring.get(keyId)).toBeUndefined();
    // The sealed rows, quotas and history replay to the same state without the key.
    expect(await (await fresh.call("/v1/operator/state-hash")).json()).toMatchObject(live);
    const v = variablesClient(fresh);
    const listed = (await (await v.list()).json()) as VariableJson[];
    expect(listed.map((x) => x.Path)).toEqual(["app/config"]);
    const read = await v.get("app/config");
    expect(read.status).toBe(500);
    expect(await read.text()).toMatch(new RegExp(`^the key ${keyId} is not available on this server`));
    const before = fresh.log.lastIndex();
    const write = await v.set("app/other", { k: "v" });
    expect(write.status).toBe(500);
    expect(await write.text()).toMatch(/is not available on this server/);
    expect(fresh.log.lastIndex()).toBe(before);
  });
});
