import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { startTypeScriptWorker } from "../../src/services/scheduler/threads/thread-loader.ts";

/**
 * Each worker thread loads its own msgpackr: a scheduler thread's decoder
 * must get the codec's extractor as the main thread's does (vitest.config.ts
 * keeps msgpackr's native one unloaded, so only the codec's can be there).
 */
describe("the codec's string extractor in a scheduler thread", () => {
  it("is installed by loading what the thread decodes with", async () => {
    const worker = startTypeScriptWorker(new URL("./extractor-thread-entry.ts", import.meta.url), {});
    try {
      const [installed] = (await once(worker, "message")) as [boolean];
      expect(installed).toBe(true);
    } finally {
      await worker.terminate();
    }
  });
});
