import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import type { VariableRow } from "../../../projections/variables.ts";
import { runReplay } from "../../../src/cli/replay-command.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { type VariableJson, variablesClient } from "./variables-fixtures.ts";

const running: TestServer[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

interface StateHash {
  Index: number;
  Hash: string;
}

const stateHash = async (s: TestServer, query = ""): Promise<StateHash> =>
  (await (await s.call(`/v1/operator/state-hash${query}`)).json()) as StateHash;

// The server without the keystore (same state, a clear error on reading
// items) is in variables-log-safety.test.ts.
describe("a log with variables, replayed with `chronomad replay` into a fresh data dir with the keystore", () => {
  it("rebuilds identical tables, and the variables open, those of an old key and of a full rekey too", async () => {
    const source = await startTestServer({ keepDir: true });
    running.push(source);
    dirs.push(source.dataDir);
    const v = variablesClient(source);
    expect((await v.set("app/one", { a: "1" })).status).toBe(200);
    expect((await v.set("app/two", { b: "2" })).status).toBe(200);
    // A rotation: app/three is sealed under the new key, the others stay under the first.
    expect((await source.call("/v1/operator/keyring/rotate", { method: "PUT" })).status).toBe(200);
    expect((await v.set("app/three", { c: "3" })).status).toBe(200);
    const updated = (await (await v.set("app/two", { b: "22" })).json()) as VariableJson;
    expect((await v.set("app/two", { b: "lost" }, "?cas=1")).status).toBe(409);
    expect((await v.set("app/gone", { d: "4" })).status).toBe(200);
    expect((await v.del("app/gone")).status).toBe(204);
    expect(updated.Items).toEqual({ b: "22" });
    const keys = (await (await source.call("/v1/operator/keyring/keys")).json()) as { KeyID: string }[];
    expect(keys).toHaveLength(2);
    const live = await stateHash(source);
    await source.close();

    const fresh = await mkdtemp(join(tmpdir(), "chronomad-replayed-"));
    dirs.push(fresh);
    const out = new PassThrough();
    let said = "";
    out.on("data", (d) => {
      said += String(d);
    });
    const code = await runReplay(
      ["--from", `file:${join(source.dataDir, "log")}`, "--to", `file:${join(fresh, "log")}`],
      out,
    );
    expect(code, said).toBe(0);
    // The keystore, which the log never carries: the operator's backup of it.
    await cp(join(source.dataDir, "server", "keystore"), join(fresh, "server", "keystore"), {
      recursive: true,
    });

    const replayed = await startTestServer({ dataDir: fresh });
    running.push(replayed);
    for (const { KeyID } of keys) expect(replayed.keyring.get(KeyID), KeyID).toBeDefined();
    // The same tables at the same index (the fresh server may since have appended its own start-up records).
    expect(await stateHash(replayed, `?at_index=${live.Index}`)).toMatchObject(live);
    const r = variablesClient(replayed);
    const listed = (await (await r.list()).json()) as VariableJson[];
    expect(listed.map((x) => x.Path)).toEqual(["app/one", "app/three", "app/two"]);
    const items = async (path: string) => {
      const res = await r.get(path);
      expect(res.status, path).toBe(200);
      return ((await res.json()) as VariableJson).Items;
    };
    expect(await items("app/one")).toEqual({ a: "1" });
    expect(await items("app/two")).toEqual({ b: "22" });
    expect(await items("app/three")).toEqual({ c: "3" });
    expect((await r.get("app/gone")).status).toBe(404);

    // The replayed server holds the keys, so a full rekey runs there too,
    // and every variable still opens under the active key afterwards.
    const rekey = await replayed.call("/v1/operator/keyring/rotate?full=true", { method: "PUT" });
    expect(rekey.status).toBe(200);
    const active = ((await rekey.json()) as { Key: { KeyID: string } }).Key.KeyID;
    const variables = replayed.store.table<VariableRow>("variables");
    await expect
      .poll(() => [...variables.all()].every((row) => row.KeyID === active), { timeout: 30_000 })
      .toBe(true);
    expect(await items("app/one")).toEqual({ a: "1" });
    expect(await items("app/three")).toEqual({ c: "3" });
  });
});
