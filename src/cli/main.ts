const USAGE = `Usage: chronomad <command> [options]

Commands:
  serve     run a server (flags: --http-addr, --data-dir, --log, --config, --read-only, ...)
  log       inspect a log (counts per event type), verify or repair a file log
  replay    copy a cluster's history into another log (--from URL --to URL [--verify])
  snapshot  save | restore FILE | inspect FILE
  export    stream every table change (deletes, actors, causes) to a file or Kafka (--to URL)
  bench     run the benchmarks and print a table (--json for one JSON object)
  nodesim   simulate client nodes against a server (--server URL --nodes N; --help)
  version   print the version

Every command takes --help (or -h), as does \`chronomad help <command>\`.
`;

const VERSION_USAGE = `Usage: chronomad version

Prints chronomad's version.

  -h, --help   print this and exit
`;

const COMMANDS = new Set(["serve", "log", "replay", "export", "snapshot", "bench", "nodesim", "version"]);

/**
 * Entry point of the `chronomad` command; resolves with the exit code. Each
 * command's module is imported when it runs: a server does not load the
 * benchmarks', the exporter's or the replay's Kafka and EventStoreDB clients.
 */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "serve":
      return (await import("./serve-command.ts")).runServe(rest);
    case "log":
      return (await import("./log-command.ts")).runLogCommand(rest, process.stdout);
    case "replay":
      return (await import("./replay-command.ts")).runReplay(rest, process.stdout);
    case "export":
      return (await import("./export-command.ts")).runExport(rest, process.stdout);
    case "snapshot":
      return (await import("./snapshot-command.ts")).runSnapshotCommand(rest, process.stdout);
    case "bench":
      return (await import("./bench-command.ts")).runBench(rest, process.stdout);
    case "nodesim":
      return (await import("./nodesim-command.ts")).runNodesim(rest, process.stdout);
    case "version":
    case "--version":
      if (rest.length > 0 && (rest[0] === "--help" || rest[0] === "-h")) {
        process.stdout.write(VERSION_USAGE);
        return 0;
      }
      if (rest.length > 0) {
        process.stderr.write(`chronomad version: unexpected argument "${rest[0]}"\n\n${VERSION_USAGE}`);
        return 2;
      }
      process.stdout.write("chronomad 0.1.0\n");
      return 0;
    case "help":
      // `chronomad help serve` is `chronomad serve --help`.
      if (rest.length > 0 && rest[0] !== "help") {
        if (!COMMANDS.has(rest[0]!)) {
          process.stderr.write(`unknown command "${rest[0]}"\n\n${USAGE}`);
          return 2;
        }
        return main([rest[0]!, "--help"]);
      }
      process.stdout.write(USAGE);
      return 0;
    case undefined:
    case "--help":
    case "-h":
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}
