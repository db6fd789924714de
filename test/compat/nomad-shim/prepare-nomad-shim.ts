import { chmod, mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/**
 * Writes a directory holding a `nomad` executable that starts chronomad
 * (nomad-shim.ts), for Nomad's own tests to find first on PATH, and returns
 * that directory. chronomad and the shim are bundled to plain JavaScript with
 * esbuild (the bundler tsx itself runs on): a server then starts in well under
 * a second instead of the seconds a loader takes to transpile it each time.
 *
 * The directory is under node_modules/.cache, so the bundles' imports of
 * packages resolve to the project's node_modules.
 */
export async function prepareNomadShim(): Promise<string> {
  const dir = join(repoRoot, "node_modules", ".cache", "chronomad-nomad-shim");
  await mkdir(dir, { recursive: true });
  const common = {
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    logLevel: "warning",
  } as const;
  await build({
    ...common,
    entryPoints: [join(repoRoot, "test", "compat", "nomad-shim", "chronomad-entry.ts")],
    outfile: join(dir, "chronomad.mjs"),
  });
  await build({
    ...common,
    entryPoints: [join(repoRoot, "test", "compat", "nomad-shim", "nomad-shim.ts")],
    outfile: join(dir, "nomad-shim.mjs"),
  });
  const launcher = join(dir, "nomad");
  await writeFile(launcher, `#!/bin/sh\nexec "${process.execPath}" "${join(dir, "nomad-shim.mjs")}" "$@"\n`);
  await chmod(launcher, 0o755);
  return dir;
}
