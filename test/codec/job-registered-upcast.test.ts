import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { allSchemas } from "../../streams/index.ts";

describe("JobRegistered v1", () => {
  it("reads as v2 with no submission", async () => {
    const bytes = await readFile(join(import.meta.dirname, "../fixtures/events/JobRegistered.v1.msgpack"));
    const event = new EnvelopeCodec(allSchemas).decode(bytes);
    expect(event.v).toBe(2);
    expect(event.data).toMatchObject({ Submission: null, EnforceIndex: true });
    expect((event.data as { Job: { ID: string } }).Job.ID).toBe("web");
  });
});
