import { describe, expect, it } from "vitest";
import { useTempDirs } from "../store/helpers.ts";
import { spawnServe } from "./serve-process.ts";
import { signalAndTime, tail } from "./timed-exit.ts";

const BLOCKING = 1_000;
const STREAMS = 100;
const GRACE_MS = 2_000;

/** Reads an event stream to its end; resolves with the bytes read, or the error that ended it. */
async function drain(res: Response): Promise<number | Error> {
  const reader = res.body!.getReader();
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return bytes;
      bytes += value.length;
    }
  } catch (err) {
    return err as Error;
  }
}

describe("chronomad serve shutdown under open long requests", () => {
  const tempDir = useTempDirs();

  it(`answers ${BLOCKING} blocking queries, ends ${STREAMS} event streams and exits within shutdown_grace + 2 s`, async () => {
    const dir = await tempDir();
    const server = await spawnServe([
      "--data-dir",
      dir,
      "--shutdown-grace",
      `${GRACE_MS}ms`,
      "--fsync",
      "never",
    ]);
    try {
      const first = await fetch(`${server.url}/v1/namespaces`);
      const index = Number(first.headers.get("x-nomad-index"));
      await first.arrayBuffer();
      const queries = Array.from({ length: BLOCKING }, () =>
        fetch(`${server.url}/v1/namespaces?index=${index}&wait=5m`).then(
          async (r) => {
            await r.arrayBuffer();
            return r.status;
          },
          (err: Error) => err,
        ),
      );
      const streams = await Promise.all(
        Array.from({ length: STREAMS }, () => fetch(`${server.url}/v1/event/stream?index=0`)),
      );
      const ended = streams.map(drain);
      // Every query reached the server and is waiting (none can be answered: nothing changes).
      await new Promise((r) => setTimeout(r, 1_500));

      const exit = await signalAndTime(server, GRACE_MS + 2_000);
      expect(exit.code, tail(server)).toBe(0);
      const statuses = await Promise.all(queries);
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      const results = await Promise.all(ended);
      expect(results.filter((r) => r instanceof Error)).toEqual([]);
      console.log(
        `shutdown with ${BLOCKING} open blocking queries and ${STREAMS} event streams: ${Math.round(exit.ms)} ms`,
      );
    } finally {
      server.child.kill("SIGKILL");
      await server.exited;
    }
  }, 120_000);
});
