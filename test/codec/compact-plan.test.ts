import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { allSchemas } from "../../streams/index.ts";
import { compactPlanSample } from "./job-samples.ts";

const FIXTURE = join(import.meta.dirname, "../fixtures/events/AllocsPlanApplied.v1.compact.msgpack");
const WITH_INDEX = join(
  import.meta.dirname,
  "../fixtures/events/AllocsPlanApplied.v1.snapshot-index.msgpack",
);
const codec = new EnvelopeCodec(allSchemas);

describe("the scheduler's compact plan record", () => {
  it("encodes to the pinned bytes and back", async () => {
    const bytes = codec.encode(compactPlanSample);
    if (process.env.UPDATE_GOLDEN === "1" && !existsSync(FIXTURE)) await writeFile(FIXTURE, bytes);
    expect(existsSync(FIXTURE), `missing ${FIXTURE}: run UPDATE_GOLDEN=1 npx vitest run test/codec`).toBe(
      true,
    );
    const pinned = await readFile(FIXTURE);
    expect(Buffer.from(bytes).toString("hex")).toBe(pinned.toString("hex"));
    expect(codec.decode(pinned)).toEqual(compactPlanSample);
  });

  it("carries the index its plan was computed at, pinned on its own (records without it stay as they were)", async () => {
    const { EvalID, PlanID, ...rest } = compactPlanSample.data;
    const sample = { ...compactPlanSample, data: { EvalID, PlanID, SnapshotIndex: 4_093, ...rest } };
    const bytes = codec.encode(sample);
    if (process.env.UPDATE_GOLDEN === "1" && !existsSync(WITH_INDEX)) await writeFile(WITH_INDEX, bytes);
    expect(
      existsSync(WITH_INDEX),
      `missing ${WITH_INDEX}: run UPDATE_GOLDEN=1 npx vitest run test/codec`,
    ).toBe(true);
    expect(Buffer.from(bytes).toString("hex")).toBe((await readFile(WITH_INDEX)).toString("hex"));
    expect(codec.decode(await readFile(WITH_INDEX)).data).toEqual(sample.data);
    expect(codec.decode(await readFile(FIXTURE)).data).not.toHaveProperty("SnapshotIndex");
  });

  it("leaves the full-spec v1 record readable as it was (the new fields are optional)", async () => {
    const v1 = codec.decode(
      await readFile(join(import.meta.dirname, "../fixtures/events/AllocsPlanApplied.v1.msgpack")),
    );
    expect(v1.type).toBe("AllocsPlanApplied");
    expect((v1.data as Record<string, unknown>).Placements).toBeUndefined();
  });
});
