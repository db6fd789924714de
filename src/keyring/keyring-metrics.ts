import type { Projections } from "../../projections/index.ts";
import { rekeyingRootKeys } from "../../projections/root-keys.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { Keyring } from "./keyring.ts";

/**
 * What an operator watches of the keyring (`GET /v1/metrics`), read when
 * scraped: a full rekey's progress, and keys this server cannot use.
 */
export function registerKeyringMetrics(
  metrics: Metrics,
  tables: Pick<Projections["tables"], "rootKeys" | "variables">,
  keyring: Keyring,
): void {
  metrics.gauge(
    "chronomad.keyring.rekey_remaining",
    () =>
      rekeyingRootKeys(tables.rootKeys).reduce((n, k) => n + tables.variables.countBy("key_id", k.KeyID), 0),
    {},
    "variables still encrypted under a rekeying root key (a full rotation in progress)",
  );
  metrics.gauge(
    "chronomad.keyring.material_unavailable",
    () => {
      let n = 0;
      for (const key of tables.rootKeys.all()) if (!keyring.has(key.KeyID)) n++;
      return n;
    },
    {},
    "root keys the log names whose material this server does not hold",
  );
}
