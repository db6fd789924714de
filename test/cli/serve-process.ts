import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";

const BIN = join(import.meta.dirname, "../../bin/chronomad.js");

export interface ServeProcess {
  readonly child: ChildProcess;
  readonly url: string;
  /** Every JSON log line the server wrote so far. */
  readonly lines: Record<string, unknown>[];
  readonly exited: Promise<number | null>;
}

/** Runs `chronomad serve` as its own process and waits until it serves. */
export async function spawnServe(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServeProcess> {
  const child = spawn(process.execPath, [BIN, "serve", "--http-addr", "127.0.0.1:0", ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: Record<string, unknown>[] = [];
  let stderr = "";
  child.stderr!.on("data", (d) => {
    stderr += String(d);
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      lines.push(entry);
      if (entry.msg === "chronomad serving") resolve(`http://${String(entry.http)}`);
    });
    exited.then((code) => reject(new Error(`chronomad serve exited with ${code} before serving: ${stderr}`)));
  });
  return { child, url, lines, exited };
}
