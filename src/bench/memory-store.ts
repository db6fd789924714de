import { pino } from "pino";
import { createProjections, type Projections } from "../../projections/index.ts";
import { allSchemas } from "../../streams/index.ts";
import { EnvelopeCodec } from "../codec/envelope-codec.ts";
import { MemoryLog } from "../log/memory-log.ts";
import { Store } from "../store/store.ts";

/**
 * A started store over a memory log with every projection and no history
 * or services: records go through the real encode, decode and apply, so
 * in-process benchmarks and figures measure what a server does per record.
 */
export async function startMemoryStore(): Promise<{ store: Store; tables: Projections["tables"] }> {
  const projections = createProjections();
  const store = new Store({
    log: new MemoryLog(),
    codec: new EnvelopeCodec(allSchemas),
    projections: projections.all,
    logger: pino({ level: "silent" }),
  });
  await store.start();
  return { store, tables: projections.tables };
}
