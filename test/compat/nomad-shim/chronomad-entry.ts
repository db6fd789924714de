// The two chronomad commands the shim runs, for the bundled build of
// prepare-nomad-shim.ts. Not src/cli/main.ts: its benchmark modules decide
// whether they are the main module by import.meta.url, which a bundle shares.
// Imported when run, as main.ts does, so that a server never loads nodesim's HTTP client.
const [command, ...args] = process.argv.slice(2);
process.exitCode =
  command === "nodesim"
    ? await (await import("../../../src/cli/nodesim-command.ts")).runNodesim(args, process.stdout)
    : await (await import("../../../src/cli/serve-command.ts")).runServe(args);
