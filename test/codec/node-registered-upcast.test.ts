import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { allSchemas } from "../../streams/index.ts";
import type { NodeRegistered } from "../../streams/nodes.ts";

const codec = new EnvelopeCodec(allSchemas);

describe("NodeRegistered v1 -> v2", () => {
  it("reads a registration written before node pools as one in the default pool", async () => {
    const v1 = await readFile(join(import.meta.dirname, "../fixtures/events/NodeRegistered.v1.msgpack"));
    const envelope = codec.decode(v1);
    expect(envelope.v).toBe(2);
    const data = envelope.data as NodeRegistered;
    expect(data.Node.NodePool).toBe("default");
    expect(data.Node.ID).toBe("f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b");
  });
});
