import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createProjections } from "../../projections/index.ts";
import { runSnapshotCommand } from "../../src/cli/snapshot-command.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { openFileLog } from "../../src/log/file/index.ts";
import { SnapshotFile } from "../../src/store/snapshot-file.ts";
import { Store } from "../../src/store/store.ts";
import { allSchemas } from "../../streams/index.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { useTempDirs } from "../store/helpers.ts";

function capture() {
  let text = "";
  const out = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { out, text: () => text };
}

describe("chronomad snapshot", () => {
  const tempDir = useTempDirs();

  it("saves, inspects and restores a snapshot a server then starts from", async () => {
    const first: TestServer = await startTestServer({ keepDir: true, args: ["--snapshot-every", "0"] });
    for (const n of ["a", "b", "c"]) await first.call(`/v1/namespace/${n}`, { method: "PUT", body: "{}" });
    const hash = first.store.hash();
    const last = first.log.lastIndex();
    await first.close();

    const file = join(await tempDir(), "copy.snapshot");
    const saved = capture();
    expect(await runSnapshotCommand(["save", "--data-dir", first.dataDir, "--out", file], saved.out)).toBe(0);
    expect(saved.text()).toMatch(new RegExp(`snapshot saved at index ${last}`));

    const inspected = capture();
    expect(await runSnapshotCommand(["inspect", file], inspected.out)).toBe(0);
    expect(inspected.text()).toMatch(new RegExp(`index ${last}`));
    expect(inspected.text()).toMatch(/table namespaces: 4 rows/);

    // Into a data dir holding the same log but no snapshots of its own.
    const { rm } = await import("node:fs/promises");
    await rm(join(first.dataDir, "snapshots"), { recursive: true, force: true });
    const restored = capture();
    expect(await runSnapshotCommand(["restore", file, "--data-dir", first.dataDir], restored.out)).toBe(0);
    const snapshots = new SnapshotFile(join(first.dataDir, "snapshots"), pino({ level: "silent" }));
    expect(await snapshots.indexes()).toEqual([last]);
    const log = await openFileLog(join(first.dataDir, "log"));
    try {
      const store = new Store({
        log,
        codec: new EnvelopeCodec(allSchemas),
        projections: createProjections().all,
        logger: pino({ level: "silent" }),
        snapshots,
      });
      await store.start({ until: last });
      expect(store.hash()).toBe(hash);
    } finally {
      await log.close();
      await rm(first.dataDir, { recursive: true, force: true });
    }
  });

  it("refuses a damaged file, a snapshot ahead of the log, and bad usage", async () => {
    const server = await startTestServer({ keepDir: true });
    await server.close();
    const dir = await tempDir();
    const { writeFile } = await import("node:fs/promises");
    await writeFile(join(dir, "junk"), "not a snapshot");
    const junk = capture();
    expect(await runSnapshotCommand(["inspect", join(dir, "junk")], junk.out)).toBe(1);
    expect(junk.text()).toMatch(/not a chronomad snapshot/);

    // A snapshot of a longer history than this data dir's log holds.
    const other = await startTestServer({ keepDir: true, args: ["--snapshot-every", "0"] });
    for (const n of ["a", "b", "c", "d"])
      await other.call(`/v1/namespace/${n}`, { method: "PUT", body: "{}" });
    await other.close();
    const file = join(dir, "ahead.snapshot");
    await runSnapshotCommand(["save", "--data-dir", other.dataDir, "--out", file], capture().out);
    const ahead = capture();
    expect(await runSnapshotCommand(["restore", file, "--data-dir", server.dataDir], ahead.out)).toBe(1);
    expect(ahead.text()).toMatch(/restore the log first/);
    expect(await runSnapshotCommand(["explode"], capture().out)).toBe(2);
    expect(await runSnapshotCommand(["inspect"], capture().out)).toBe(2);
  });
});
