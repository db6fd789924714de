import { createHash } from "node:crypto";
import type { ServiceRegistrationSpec } from "../../streams/service-registrations.ts";

/** Nomad's ErrMalformedChooseParameter. */
export const MALFORMED_CHOOSE = "Parameter for choose must be in form '<number>|<key>'";

export class ChooseError extends Error {}

type Hashed = Pick<
  ServiceRegistrationSpec,
  "Port" | "AllocID" | "ID" | "Namespace" | "Address" | "ServiceName" | "Tags"
>;

/**
 * Nomad's ServiceRegistration.HashWith: md5 over the port (8 bytes, big
 * endian), AllocID, ID, Namespace, Address, ServiceName, each tag and the
 * caller's key, in hex. The same inputs give Nomad's very ranking.
 */
export function hashWith(service: Hashed, key: string): string {
  const port = Buffer.alloc(8);
  // Go's uint64(int): a negative port wraps, as BigInt.asUintN does.
  port.writeBigUInt64BE(BigInt.asUintN(64, BigInt(service.Port)));
  const sum = createHash("md5");
  sum.update(port);
  for (const part of [service.AllocID, service.ID, service.Namespace, service.Address, service.ServiceName])
    sum.update(part, "utf8");
  for (const tag of service.Tags) sum.update(tag, "utf8");
  sum.update(key, "utf8");
  return sum.digest("hex");
}

/**
 * `?choose=<n>|<key>`: Nomad's rendezvous hashing, a stable choice of `n`
 * registrations for the requester `key` (consul-template passes the
 * allocation ID), ordered by their hash with the key. Throws ChooseError
 * with Nomad's words when the parameter is not of that form.
 */
export function chooseServices<S extends Hashed>(services: readonly S[], parameter: string): S[] {
  const bar = parameter.indexOf("|");
  if (bar < 0) throw new ChooseError(MALFORMED_CHOOSE);
  const count = parameter.slice(0, bar);
  const key = parameter.slice(bar + 1);
  // strconv.Atoi's form; a negative count (which makes Nomad panic) is malformed too.
  if (!/^\+?[0-9]+$/.test(count) || key === "") throw new ChooseError(MALFORMED_CHOOSE);
  const n = Math.min(Number(count), services.length);
  const ranked = services.map((service) => ({ hash: hashWith(service, key), service }));
  // Array#sort is stable, as Go's sort.SliceStable.
  ranked.sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
  return ranked.slice(0, n).map((r) => r.service);
}
