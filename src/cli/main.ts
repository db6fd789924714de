import { runBench } from "./bench-command.ts";
import { runExport } from "./export-command.ts";
import { runLogCommand } from "./log-command.ts";
import { runNodesim } from "./nodesim-command.ts";
import { runReplay } from "./replay-command.ts";
import { runServe } from "./serve-command.ts";
import { runSnapshotCommand } from "./snapshot-command.ts";

const USAGE = `Usage: chronomad <command> [options]

Commands:
  serve     run a server (flags: --http-addr, --data-dir, --log, --config, ...; see README)
  log       operate on a file log: verify, repair --truncate-after N
  replay    copy a cluster's history into another log (--from URL --to URL [--verify])
  snapshot  save | restore FILE | inspect FILE
  export    stream table changes as flat records to a file or Kafka (--to URL)
  bench     run the benchmarks and print a table (--json for one JSON object)
  nodesim   simulate client nodes against a server (--server URL --nodes N; --help)
  version   print the version
`;

/** Entry point of the `chronomad` command; resolves with the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "serve":
      return runServe(rest);
    case "log":
      return runLogCommand(rest, process.stdout);
    case "replay":
      return runReplay(rest, process.stdout);
    case "export":
      return runExport(rest, process.stdout);
    case "snapshot":
      return runSnapshotCommand(rest, process.stdout);
    case "bench":
      return runBench(rest, process.stdout);
    case "nodesim":
      return runNodesim(rest, process.stdout);
    case "version":
    case "--version":
      process.stdout.write("chronomad 0.1.0\n");
      return 0;
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}
