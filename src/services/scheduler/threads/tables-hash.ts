import { createHash } from "node:crypto";
import { packPlain } from "../../../codec/envelope-codec.ts";
import type { AnyTable } from "../../../store/table.ts";

/**
 * Store.hash() over some tables only, by the same rule (name, size, then
 * every row in key order): a replica and the main store that hold the same
 * rows at one index give the same digest.
 */
export function tablesHash(names: readonly string[], table: (name: string) => AnyTable): string {
  const h = createHash("sha256");
  for (const name of [...names].sort()) {
    const t = table(name);
    h.update(`${name}\u0000${t.size}\u0000`);
    for (const row of t.all()) h.update(packPlain(row));
  }
  return h.digest("hex");
}
