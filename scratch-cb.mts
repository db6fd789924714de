import { benchCluster } from "./src/bench/cluster-bench.ts";

console.log(JSON.stringify(await benchCluster("127.0.0.1:29092", { killRounds: 5 })));
