import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { beforeAll, describe, expect, it } from "vitest";
import { expectedFiles, type Generated, generateEventSchemas } from "../../scripts/event-schemas.mts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import { allSchemas } from "../../streams/index.ts";
import { eventSamples } from "../codec/event-samples.ts";
import { compactPlanSample } from "../codec/job-samples.ts";

const ROOT = join(import.meta.dirname, "../..");
const FIXTURES = join(ROOT, "test/fixtures/events");

describe("docs/schemas and the versions table of docs/log-format.md", () => {
  it("are what `npm run docs:schemas` writes from the stream types now", async () => {
    const expected = await expectedFiles();
    for (const [path, content] of expected) {
      const committed = await readFile(join(ROOT, path), "utf8").catch(() => "(missing)");
      expect(committed, `${path} is out of date: run npm run docs:schemas`).toBe(content);
    }
    const onDisk = (await readdir(join(ROOT, "docs/schemas"))).map((n) => `docs/schemas/${n}`);
    const stale = onDisk.filter((p) => !expected.has(p));
    expect(stale, "schemas of types or versions that no longer exist: run npm run docs:schemas").toEqual([]);
  });
});

describe("every golden sample", () => {
  // Closed: a property the type does not declare fails, so samples and types cannot disagree.
  let closed: Generated;
  const ajv = new Ajv2020({ allErrors: true, allowUnionTypes: true });
  const codec = new EnvelopeCodec(allSchemas);
  beforeAll(() => {
    closed = generateEventSchemas({ closed: true });
  });

  const check = (e: Envelope, where: string) => {
    const schema = closed.schemas.get(e.type);
    expect(schema, `${where}: no schema for ${e.type}`).toBeDefined();
    const validate = ajv.compile(schema!);
    expect(validate(e.data), `${where}: ${ajv.errorsText(validate.errors)}`).toBe(true);
    const envelope = ajv.compile(closed.envelope);
    expect(envelope(e), `${where} (envelope): ${ajv.errorsText(envelope.errors)}`).toBe(true);
  };

  it("has data that its type's schema accepts", () => {
    for (const e of [...eventSamples, compactPlanSample]) check(e, `sample ${e.type}`);
  });

  it("read from its fixture, older versions and encodings upcast, too", async () => {
    const dirs = [FIXTURES, join(FIXTURES, "float64")];
    let n = 0;
    for (const dir of dirs) {
      for (const name of (await readdir(dir)).filter((f) => f.endsWith(".msgpack"))) {
        check(codec.decode(await readFile(join(dir, name))), name);
        n++;
      }
    }
    expect(n).toBeGreaterThan(allSchemas.length);
  });

  it("is refused when its data lacks a required field or has one the type does not declare", () => {
    const sample = eventSamples.find((e) => e.type === "NamespaceDeleted")!;
    const validate = ajv.compile(closed.schemas.get("NamespaceDeleted")!);
    expect(validate({})).toBe(false);
    expect(validate({ ...(sample.data as object), Extra: 1 })).toBe(false);
    // The committed schemas are open: a newer writer may add optional fields without a new version.
    const open = generateEventSchemas().schemas.get("NamespaceDeleted")!;
    expect(ajv.compile(open)({ ...(sample.data as object), Extra: 1 })).toBe(true);
  });
});
