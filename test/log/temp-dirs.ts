import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Temp directories for one test file, removed by `cleanup()` (call it from afterEach/afterAll). */
export function tempDirs(prefix: string) {
  const made: string[] = [];
  return {
    async make(): Promise<string> {
      const dir = await mkdtemp(join(tmpdir(), `chronomad-${prefix}-`));
      made.push(dir);
      return dir;
    },
    async cleanup(): Promise<void> {
      for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
    },
  };
}
