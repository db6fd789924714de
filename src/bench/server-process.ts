import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { NODE_FLAGS } from "../cli/node-flags.ts";

const BIN = join(import.meta.dirname, "../../bin/chronomad.js");

export interface ServerProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** host:port the server advertises. */
  readonly address: string;
  readonly url: string;
  readonly exited: Promise<number | null>;
}

/** Runs `chronomad serve` as its own process, on an ephemeral port, and waits until it serves. */
export async function spawnServer(name: string, args: readonly string[]): Promise<ServerProcess> {
  const child = spawn(
    process.execPath,
    [
      ...NODE_FLAGS,
      BIN,
      "serve",
      "--http-addr",
      "127.0.0.1:0",
      "--server-name",
      name,
      "--log-level",
      "info",
      ...args,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr!.on("data", (d) => {
    stderr += String(d);
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const address = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (!line.includes('"chronomad serving"')) return;
      try {
        resolve(String((JSON.parse(line) as { http: unknown }).http));
      } catch (err) {
        reject(err);
      }
    });
    exited.then((code) => reject(new Error(`${name} exited with ${code} before serving: ${stderr}`)));
  });
  return { name, child, address, url: `http://${address}`, exited };
}
