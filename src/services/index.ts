import type { ServerConfig } from "../config.ts";
import type { LeaderService } from "./service.ts";

/** The leader-only services of a server, in start order. */
export function createServices(_config: ServerConfig): LeaderService[] {
  return [];
}
