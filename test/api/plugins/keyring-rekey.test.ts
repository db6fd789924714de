import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { VariableRow } from "../../../projections/variables.ts";
import { EnvelopeCodec } from "../../../src/codec/envelope-codec.ts";
import type { Envelope } from "../../../streams/event-schema.ts";
import { allSchemas } from "../../../streams/index.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";

interface KeyMeta {
  KeyID: string;
  State: string;
  ModifyIndex: number;
}

function capturingLogger() {
  const lines: { msg: string; [k: string]: unknown }[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines };
}

describe("full rekey (rotate -full)", () => {
  const running: TestServer[] = [];
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop();
  });

  const keys = async (s: TestServer) =>
    (await (await s.call("/v1/operator/keyring/keys")).json()) as KeyMeta[];
  const putVar = async (s: TestServer, path: string, items: Record<string, string>) => {
    const res = await s.call(`/v1/var/${path}`, { method: "PUT", body: JSON.stringify({ Items: items }) });
    expect(res.status, await res.clone().text()).toBe(200);
  };
  const rotate = async (s: TestServer, query = "") => {
    const res = await s.call(`/v1/operator/keyring/rotate${query}`, { method: "PUT" });
    expect(res.status).toBe(200);
    return ((await res.json()) as { Key: KeyMeta }).Key;
  };

  it("re-encrypts every variable of every older key under the new key, then marks those keys inactive", async () => {
    const { logger, lines } = capturingLogger();
    const s = await startTestServer({ deps: { logger } });
    running.push(s);
    const [a] = await keys(s);
    // Under key A, then under key B after a plain rotation: more than one append's batch.
    for (let i = 0; i < 25; i++) await putVar(s, `app/a${String(i).padStart(2, "0")}`, { n: String(i) });
    const b = await rotate(s);
    for (let i = 0; i < 20; i++)
      await putVar(s, `app/b${String(i).padStart(2, "0")}`, { n: String(100 + i) });
    const variables = s.store.table<VariableRow>("variables");
    const before = new Map([...variables.all()].map((v) => [v.Path, v]));
    expect(new Set([...before.values()].map((v) => v.KeyID))).toEqual(new Set([a!.KeyID, b.KeyID]));

    const c = await rotate(s, "?full=true");
    // The same apply made both older keys rekeying.
    const during = await keys(s);
    expect(
      during.filter((k) => k.KeyID !== c.KeyID).every((k) => ["rekeying", "inactive"].includes(k.State)),
    ).toBe(true);

    await expect
      .poll(async () => Object.fromEntries((await keys(s)).map((k) => [k.KeyID, k.State])), {
        timeout: 15_000,
      })
      .toEqual({ [a!.KeyID]: "inactive", [b.KeyID]: "inactive", [c.KeyID]: "active" });

    const after = [...variables.all()];
    expect(after).toHaveLength(45);
    for (const v of after) {
      expect(v.KeyID, v.Path).toBe(c.KeyID);
      const old = before.get(v.Path)!;
      expect(v.Data).not.toBe(old.Data);
      expect(v.CreateIndex).toBe(old.CreateIndex);
      expect(v.CreateTime).toBe(old.CreateTime);
      expect(v.ModifyIndex).toBeGreaterThan(old.ModifyIndex);
    }
    // Still the same items, opened with the new key.
    const read = await s.call("/v1/var/app/b07");
    expect(((await read.json()) as { Items: unknown }).Items).toEqual({ n: "107" });

    // The rewrites are the leader's, caused by the rotation; nothing in the log is in clear.
    const rewrites: Envelope[] = [];
    const codec = new EnvelopeCodec(allSchemas);
    for await (const batch of s.log.read(1)) {
      for (const record of batch) {
        const envelope = codec.decode(record.bytes);
        if (envelope.type === "VariableApplied" && (envelope.data as { Op: string }).Op === "cas") {
          rewrites.push(envelope);
        }
      }
    }
    expect(rewrites).toHaveLength(45);
    for (const e of rewrites) {
      expect(e.by?.kind).toBe("server");
      expect(e.cause).toMatchObject({ type: "RootKeyCreated" });
    }

    const progress = lines.filter((l) => /^rekey: \d+ of 45 variables$/.test(l.msg)).map((l) => l.msg);
    expect(progress[0]).toBe("rekey: 0 of 45 variables");
    expect(progress.at(-1)).toBe("rekey: 45 of 45 variables");
    expect(lines.filter((l) => l.msg === "rekey: done; the key is now inactive").map((l) => l.keyId)).toEqual(
      expect.arrayContaining([a!.KeyID, b.KeyID]),
    );
    const metrics = await (await s.call("/v1/metrics?format=prometheus")).text();
    expect(metrics).toMatch(/^chronomad_keyring_rekey_remaining 0$/m);
  });

  it("a full rotation with nothing to re-encrypt marks the old key inactive at once", async () => {
    const s = await startTestServer();
    running.push(s);
    const [a] = await keys(s);
    await rotate(s, "?full");
    await expect
      .poll(async () => (await keys(s)).find((k) => k.KeyID === a!.KeyID)?.State, { timeout: 10_000 })
      .toBe("inactive");
  });

  it("leaves no key material and no variable in clear in the log or snapshots, with a cluster KEK too", async () => {
    const dir = await mkdtemp(join(tmpdir(), "chronomad-rekey-"));
    const kek = join(dir, "kek");
    await writeFile(kek, randomBytes(32).toString("base64"));
    const dataDir = join(dir, "data");
    const s = await startTestServer({ dataDir, args: ["--keyring-kek-file", kek] });
    try {
      const secret = "correct-horse-battery-staple";
      await putVar(s, "app/secret", { password: secret });
      await rotate(s, "?full");
      await expect
        .poll(async () => (await keys(s)).filter((k) => k.State === "rekeying").length, { timeout: 10_000 })
        .toBe(0);
      const materials = (await keys(s)).map((k) => s.keyring.get(k.KeyID)!.key);
      expect(materials).toHaveLength(2);
      await s.stop();
      const forms = (b: Buffer) => [
        b,
        ...(["base64", "base64url", "hex"] as const).map((e) => Buffer.from(b.toString(e))),
      ];
      const needles = [...materials.flatMap(forms), Buffer.from(secret)];
      const keystore = join(dataDir, "server", "keystore");
      const entries = await readdir(dataDir, { recursive: true, withFileTypes: true });
      const files = entries
        .filter((e) => e.isFile())
        .map((e) => join(e.parentPath, e.name))
        .filter((f) => !f.startsWith(keystore));
      expect(files.some((f) => f.startsWith(join(dataDir, "snapshots")))).toBe(true);
      for (const file of files) {
        const bytes = await readFile(file);
        for (const needle of needles) expect(bytes.includes(needle), file).toBe(false);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
