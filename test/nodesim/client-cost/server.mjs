// A server for rpc-client-figures.test.ts, in a process of its own so that
// the test's CPU is the client's alone: Alloc.GetAllocs answers with a
// reply the server sent in a load benchmark, anything else with a short one.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

// Written out as the server sends it (the file is formatted).
const allocs = Buffer.from(
  JSON.stringify(JSON.parse(readFileSync(new URL("./get-allocs-reply.json", import.meta.url), "utf8"))),
);
const small = Buffer.from('{"Index":5,"LastContact":0,"KnownLeader":true}');
const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.setHeader("content-type", "application/json; charset=utf-8");
    res.end(req.url?.endsWith("Alloc.GetAllocs") ? allocs : small);
  });
});
server.keepAliveTimeout = 72_000;
server.listen(0, "127.0.0.1", () => process.send?.(server.address().port));
