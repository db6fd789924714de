export {
  ESDB_APPEND_LIMITS,
  ESDB_EVENT_OVERHEAD,
  EsdbLog,
  type EsdbLogOptions,
  openEsdbLog,
} from "./esdb-log.ts";
export { DEFAULT_ESDB_STREAM, type EsdbLogAddress, parseEsdbUrl } from "./esdb-url.ts";
