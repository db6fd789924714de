import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A server that reads every call and answers the ones `answer` picks: at
 * once (true), after that many milliseconds (a number), or never (false).
 */
export async function serve(
  answer: (req: IncomingMessage) => boolean | number,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => {
      const when = answer(req);
      if (when === false) return;
      const reply = () => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ Index: 7 }));
      };
      if (when === true) reply();
      else setTimeout(reply, when);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}
