import { request } from "node:http";

export interface StreamFrame {
  Index?: number;
  Events?: { Topic: string; Type: string; Key: string; Index: number; Payload: Record<string, unknown> }[];
  Error?: string;
}

/**
 * Reads `/v1/event/stream` until `until` says stop (or the server ends the
 * stream), returning every non-heartbeat frame.
 */
export function readStream(
  url: string,
  until: (frames: StreamFrame[]) => boolean,
  options: { onResponse?: (paused: { pause(): void; resume(): void }) => void } = {},
): Promise<{ status: number; frames: StreamFrame[]; text?: string }> {
  return new Promise((resolve, reject) => {
    const frames: StreamFrame[] = [];
    const req = request(url, (res) => {
      if (res.statusCode !== 200) {
        let text = "";
        res.on("data", (d) => {
          text += String(d);
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, frames, text }));
        return;
      }
      options.onResponse?.(res);
      let partial = "";
      let done = false;
      res.on("data", (chunk) => {
        partial += String(chunk);
        const lines = partial.split("\n");
        partial = lines.pop()!;
        for (const line of lines) {
          if (line === "" || line === "{}") continue;
          frames.push(JSON.parse(line) as StreamFrame);
        }
        if (!done && until(frames)) {
          done = true;
          req.destroy();
          resolve({ status: 200, frames });
        }
      });
      res.on("end", () => {
        if (!done) resolve({ status: 200, frames });
      });
    });
    req.on("error", (err) => {
      if ((err as NodeJS.ErrnoException).code !== "ECONNRESET") reject(err);
    });
    req.end();
  });
}
