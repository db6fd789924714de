import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach } from "vitest";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { MemoryLog } from "../../src/log/memory-log.ts";
import type { Projection } from "../../src/store/projection.ts";
import { Store } from "../../src/store/store.ts";
import { allSchemas } from "../../streams/index.ts";

/** A temp directory removed after the current test. */
export function useTempDirs(): () => Promise<string> {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
  });
  return async () => {
    const d = await mkdtemp(join(tmpdir(), "chronomad-test-"));
    dirs.push(d);
    return d;
  };
}

/** A started Store over an in-memory log with `projections`, logging nothing. */
export async function memoryStore(
  projections: Projection[],
  options: { applySliceMs?: number } = {},
): Promise<Store> {
  const store = new Store({
    log: new MemoryLog(),
    codec: new EnvelopeCodec(allSchemas),
    projections,
    logger: pino({ level: "silent" }),
    ...options,
  });
  await store.start();
  return store;
}
