import { chmod, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
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
 *
 * chronomad starts its worker threads (the scheduler's replicas, nodesim's
 * heartbeat thread) from TypeScript entries named beside the module that
 * starts them (`new URL("./replica-thread.ts", import.meta.url)`), which in
 * a bundle is this directory: each such entry is bundled too, and a one-line
 * `.ts` file of that name imports it, so the servers Nomad's tests run
 * against schedule on their threads as `npm start`'s server does.
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
  // Split at dynamic imports: a bundle hoists every package import to its
  // top, so without chunks each start would load the Kafka and EventStoreDB
  // clients, and nodesim's HTTP client, that only their own paths use.
  // Chunks sit beside the entry, so `import.meta.url` names this directory.
  const { metafile } = await build({
    ...common,
    entryPoints: { chronomad: join(repoRoot, "test", "compat", "nomad-shim", "chronomad-entry.ts") },
    outdir: dir,
    splitting: true,
    chunkNames: "chunk-[hash]",
    outExtension: { ".js": ".mjs" },
    metafile: true,
  });
  // Chunks are named by their content: those of an earlier build of other sources go.
  const written = new Set(Object.keys(metafile.outputs).map((path) => basename(path)));
  for (const f of await readdir(dir)) if (f.startsWith("chunk-") && !written.has(f)) await rm(join(dir, f));
  await build({
    ...common,
    entryPoints: [join(repoRoot, "test", "compat", "nomad-shim", "nomad-shim.ts")],
    outfile: join(dir, "nomad-shim.mjs"),
  });
  // Node looks for a package scope no higher than node_modules: without one here a `.ts` file would load as CommonJS.
  await writeFile(join(dir, "package.json"), '{ "type": "module" }\n');
  const sources = await readdir(join(repoRoot, "src"), { recursive: true });
  for (const entry of await bundledWorkerEntries(dir)) {
    const bundled = entry.replace(/\.ts$/, ".mjs");
    await build({ ...common, entryPoints: [workerSource(sources, entry)], outfile: join(dir, bundled) });
    await writeFile(join(dir, entry), `import "./${bundled}";\n`);
  }
  const launcher = join(dir, "nomad");
  await writeFile(launcher, `#!/bin/sh\nexec "${process.execPath}" "${join(dir, "nomad-shim.mjs")}" "$@"\n`);
  await chmod(launcher, 0o755);
  return dir;
}

/** The worker thread entries chronomad's bundle in `dir` names, in its entry file or its chunks. */
export async function bundledWorkerEntries(dir: string): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => f === "chronomad.mjs" || f.startsWith("chunk-"));
  const texts = await Promise.all(files.map((f) => readFile(join(dir, f), "utf8")));
  return workerEntries(texts.join("\n"));
}

/** The worker thread entries a bundle names beside itself: `new URL("./name.ts", import.meta.url)`. */
export function workerEntries(bundle: string): string[] {
  const names = new Set<string>();
  for (const m of bundle.matchAll(/new URL\(\s*"\.\/([\w.-]+\.ts)"\s*,\s*import\.meta\.url\s*\)/g))
    names.add(m[1]!);
  return [...names].sort();
}

/** Where under src/ (`sources`, its paths) a worker entry lives: checked to be the one file of that name. */
function workerSource(sources: readonly string[], entry: string): string {
  const found = sources.filter((path) => path === entry || path.endsWith(`/${entry}`));
  if (found.length !== 1)
    throw new Error(`worker entry ${entry}: ${found.length} files of that name under src/`);
  return join(repoRoot, "src", found[0]!);
}
