import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { allSchemas } from "../../streams/index.ts";
import type { RootKeyCreated } from "../../streams/keyring.ts";

const codec = new EnvelopeCodec(allSchemas);

describe("RootKeyCreated v1 -> v2", () => {
  it("reads a key written before rotation existed as one that rekeys nothing", async () => {
    const v1 = await readFile(join(import.meta.dirname, "../fixtures/events/RootKeyCreated.v1.msgpack"));
    const envelope = codec.decode(v1);
    expect(envelope.v).toBe(2);
    const data = envelope.data as RootKeyCreated;
    expect(data.Rekey).toBe(false);
    expect(data.Meta).toMatchObject({ KeyID: "5b3e9a1c-2d4f-4e6a-8b7c-9d0e1f2a3b4c", State: "active" });
    expect(data.OnlyIfNoActiveKey).toBe(true);
  });
});
