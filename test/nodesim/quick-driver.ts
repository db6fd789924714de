import { DEFAULT_DRIVER, type DriverOptions } from "../../src/nodesim/driver-options.ts";

/** A fixed duration of `ms` for the driver's min/max ranges. */
export const at = (ms: number) => ({ min: ms, max: ms });

/** Tasks run 100 ms after they are received; a kill takes 50 ms; nothing fails. */
export const DRIVER: DriverOptions = {
  ...DEFAULT_DRIVER,
  setup: at(10),
  pull: at(40),
  start: at(50),
  kill: at(50),
  failureRate: 0,
  eventInterval: 0,
};
