import { pino } from "pino";
import { createProjections, type Projections } from "../projections/index.ts";
import { EnvelopeCodec } from "../src/codec/envelope-codec.ts";
import type { EventLog } from "../src/log/event-log.ts";
import { Store } from "../src/store/store.ts";
import { allSchemas } from "../streams/index.ts";

/**
 * A second, unstarted store over an existing log, with every projection (or
 * the ones given, to read their tables), for tests that rebuild the tables
 * from the log and compare them with the live store.
 */
export function replayStore(log: EventLog, projections: Projections = createProjections()): Store {
  return new Store({
    log,
    codec: new EnvelopeCodec(allSchemas),
    projections: projections.all,
    logger: pino({ level: "silent" }),
  });
}
