import type { Server } from "node:http";
import type { FastifyInstance } from "fastify";

const IDLE_SWEEP_MS = 50;

/**
 * Stops the HTTP API within `graceMs`: no new connections; keep-alive
 * connections that are idle now are closed at once (a client such as
 * Nomad's Go API keeps them for minutes, and any of them holds
 * `server.close()` for the whole keep-alive timeout); requests in flight
 * may finish, their connections closed once answered, and whatever is
 * still open when the grace runs out is cut.
 *
 * Long waits (blocking queries, event streams) are expected to have been
 * answered already, through the server's closing signal.
 */
export async function drainHttp(app: FastifyInstance, graceMs: number): Promise<{ cut: boolean }> {
  const server: Server = app.server;
  let done = false;
  const closed = app.close().then(() => {
    done = true;
  });
  // Node's server.close() closes only the connections idle at that moment.
  // One whose request was in flight goes idle once answered and, kept
  // alive, would hold the close until the grace ends: swept every so often.
  server.closeIdleConnections();
  const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  let cut = false;
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, graceMs);
  });
  await Promise.race([closed, graceOver]);
  clearTimeout(timer);
  clearInterval(sweep);
  if (!done) {
    cut = true;
    server.closeAllConnections();
  }
  await closed;
  return { cut };
}
