// The two chronomad commands the shim runs, for the bundled build of
// prepare-nomad-shim.ts. Not src/cli/main.ts: its benchmark modules decide
// whether they are the main module by import.meta.url, which a bundle shares.
import { runNodesim } from "../../../src/cli/nodesim-command.ts";
import { runServe } from "../../../src/cli/serve-command.ts";

const [command, ...args] = process.argv.slice(2);
process.exitCode = command === "nodesim" ? await runNodesim(args, process.stdout) : await runServe(args);
