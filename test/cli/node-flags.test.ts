import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NODE_FLAGS } from "../../src/cli/node-flags.ts";

const root = join(import.meta.dirname, "../..");
const flags = NODE_FLAGS.join(" ");

// Node reads V8 flags before any chronomad code runs, so each way of starting
// chronomad repeats them; this keeps the copies equal to NODE_FLAGS.
describe("V8 flags on every entry point", () => {
  it("bin/chronomad.js's shebang", async () => {
    const bin = await readFile(join(root, "bin/chronomad.js"), "utf8");
    expect(bin.split("\n")[0]).toBe(`#!/usr/bin/env -S node ${flags}`);
  });

  it("npm start, npm run bench and npm run bench:load", async () => {
    const { scripts } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(scripts.start).toBe(`node ${flags} bin/chronomad.js serve`);
    expect(scripts.bench).toBe(`node ${flags} bin/chronomad.js bench`);
    expect(scripts["bench:load"]).toContain(`node ${flags} --import tsx`);
  });

  it("the Dockerfile's entry point", async () => {
    const dockerfile = await readFile(join(root, "Dockerfile"), "utf8");
    const entry = JSON.stringify(["node", ...NODE_FLAGS, "bin/chronomad.js"]).replaceAll(",", ", ");
    expect(dockerfile).toContain(`ENTRYPOINT ${entry}`);
  });
});
