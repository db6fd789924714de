import { randomBytes } from "node:crypto";
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { RootKeyMaterial } from "../../src/keyring/root-key-material.ts";
import { filesUnder } from "../files-under.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";

interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

function capturingLogger() {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines };
}

/** Every form a secret could take in a file: raw bytes and the usual text encodings. */
function forms(secret: Buffer): Buffer[] {
  return [
    secret,
    ...(["base64", "base64url", "hex"] as const).map((enc) => Buffer.from(secret.toString(enc))),
  ];
}

function signingSeed(material: RootKeyMaterial): Buffer {
  const der = material.signingKey.export({ format: "der", type: "pkcs8" });
  return der.subarray(der.length - 32);
}

describe("keyring bootstrap", () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });
  const tempDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), "chronomad-keyring-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    return dir;
  };
  const start = async (options: Parameters<typeof startTestServer>[0] = {}) => {
    const s = await startTestServer({ ...options, dataDir: options.dataDir ?? (await tempDir()) });
    cleanup.push(() => s.close());
    return s;
  };
  const kekFile = async () => {
    const file = join(await tempDir(), "kek");
    await writeFile(file, randomBytes(32).toString("base64"));
    return file;
  };
  const onlyKey = async (s: TestServer) => {
    const keys = (await (await s.call("/v1/operator/keyring/keys")).json()) as { KeyID: string }[];
    expect(keys).toHaveLength(1);
    return keys[0]!.KeyID;
  };

  it("creates one key at first start, and a restart reuses it and appends nothing", async () => {
    const first = await start({ args: ["--server-name", "s1"] });
    const keyId = await onlyKey(first);
    const material = first.keyring.get(keyId)!;
    const last = first.log.lastIndex();
    await first.close();

    const again = await start({ dataDir: first.dataDir, args: ["--server-name", "s1"] });
    expect(await onlyKey(again)).toBe(keyId);
    expect(again.log.lastIndex()).toBe(last);
    // From its keystore: the same material, so what it signed still verifies.
    expect(again.keyring.get(keyId)?.key.equals(material.key)).toBe(true);
  });

  for (const withKek of [false, true]) {
    it(`leaves no key material in the log or snapshots${withKek ? ", also when the log carries it wrapped" : ""}`, async () => {
      const kek = withKek ? await kekFile() : undefined;
      const s = await start({ args: kek ? ["--keyring-kek-file", kek] : [] });
      const keyId = await onlyKey(s);
      const material = s.keyring.get(keyId)!;
      await s.close();
      const secrets = [material.key, signingSeed(material)];
      if (kek) secrets.push(Buffer.from(await readFile(kek, "utf8"), "base64"));
      const keystore = join(s.dataDir, "server", "keystore");
      const files = (await filesUnder(s.dataDir)).filter((f) => !f.startsWith(keystore));
      // The scan covers the log's segments and the snapshot written at shutdown.
      expect(files.some((f) => f.startsWith(join(s.dataDir, "log")))).toBe(true);
      expect(files.some((f) => f.startsWith(join(s.dataDir, "snapshots")))).toBe(true);
      for (const file of files) {
        const bytes = await readFile(file);
        for (const form of secrets.flatMap(forms)) {
          expect(bytes.includes(form), `${relative(s.dataDir, file)} holds key material`).toBe(false);
        }
      }
    });
  }

  it("with the cluster KEK, a fresh server replaying the log gets every key from it", async () => {
    const kek = await kekFile();
    const args = ["--server-name", "s1", "--keyring-kek-file", kek];
    const a = await start({ args });
    const keyId = await onlyKey(a);
    const key = a.keyring.get(keyId)!.key;
    const hash = a.store.hash();
    await a.close();

    const logCopy = join(await tempDir(), "log");
    await cp(join(a.dataDir, "log"), logCopy, { recursive: true });
    const b = await start({ args: [...args, "--log", `file:${logCopy}`] });
    expect(b.store.hash()).toBe(hash);
    expect(b.keyring.get(keyId)?.key.equals(key)).toBe(true);
    // Kept in its own keystore too, wrapped under the cluster KEK.
    expect(await readdir(join(b.dataDir, "server", "keystore"))).toEqual([`${keyId}.nks.json`]);
  });

  for (const [wrapped, why] of [
    [true, /wrapped under cluster KEK [0-9a-f]{16}, but this server has no keyring_kek/],
    [false, /the log does not carry it \(it was created without a cluster KEK\)/],
  ] as const) {
    it(`without the key, a fresh server rebuilds every table and says why (${wrapped ? "no KEK" : "no wrapped copy"})`, async () => {
      const a = await start({
        args: ["--server-name", "s1", ...(wrapped ? ["--keyring-kek-file", await kekFile()] : [])],
      });
      const keyId = await onlyKey(a);
      const hash = a.store.hash();
      const jwks = await (await a.call("/.well-known/jwks.json")).json();
      await a.close();

      const logCopy = join(await tempDir(), "log");
      await cp(join(a.dataDir, "log"), logCopy, { recursive: true });
      const { logger, lines } = capturingLogger();
      const b = await start({ args: ["--server-name", "s1", "--log", `file:${logCopy}`], deps: { logger } });
      expect(b.store.hash()).toBe(hash);
      expect(b.keyring.has(keyId)).toBe(false);
      const warning = lines.find((l) => l.level === 40 && l.keyId === keyId);
      expect(warning?.msg).toMatch(new RegExp(`^root key ${keyId} material unavailable: `));
      expect(warning?.msg).toMatch(why);
      expect(warning?.msg).toMatch(/Every table is still rebuilt from the log/);
      // The public keys are in the log: the JWKS does not depend on the material.
      expect(await (await b.call("/.well-known/jwks.json")).json()).toEqual(jwks);
    });
  }

  it("with the memory log, keeps the material in memory only", async () => {
    const s = await start({ args: ["--log", "memory:"] });
    const keyId = await onlyKey(s);
    expect(s.keyring.has(keyId)).toBe(true);
    expect(await readdir(s.dataDir)).not.toContain("server");
  });
});
