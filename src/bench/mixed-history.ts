import type { Envelope } from "../../streams/event-schema.ts";

/** A small seeded PRNG (mulberry32): the same seed gives the same history everywhere. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A reproducible history touching every event type the log knows: creates,
 * updates and deletes, plus writes that apply must reject (deleting what is
 * gone, a second bootstrap). Used by the determinism tests and the replay
 * benchmark.
 */
export function* mixedHistory(count: number, seed = 1): Generator<Envelope> {
  const random = seededRandom(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const at = 1_763_800_000_000;
  const by = { kind: "server", id: "history" } as const;
  yield {
    type: "ClusterBootstrapped",
    v: 1,
    at,
    by,
    data: { ClusterID: "c0ffee00-0000-4000-8000-000000000001", CreateTime: at, ServerName: "history" },
  };
  const names = Array.from({ length: 64 }, (_, i) => `ns-${i}`);
  for (let i = 1; i < count; i++) {
    const roll = random();
    const name = pick(names);
    const t = at + i;
    if (roll < 0.7) {
      yield {
        type: "NamespaceUpserted",
        v: 1,
        at: t,
        by,
        data: {
          Namespace: {
            Name: name,
            Description: `revision ${i}`,
            Quota: "",
            Meta: random() < 0.5 ? null : { team: pick(["a", "b", "c"]), rev: String(i) },
            Capabilities: random() < 0.8 ? null : { EnabledTaskDrivers: ["docker"], DisabledTaskDrivers: [] },
          },
        },
      };
    } else if (roll < 0.995) {
      yield { type: "NamespaceDeleted", v: 1, at: t, by, data: { Name: random() < 0.02 ? "default" : name } };
    } else {
      yield {
        type: "ClusterBootstrapped",
        v: 1,
        at: t,
        by,
        data: { ClusterID: `late-${i}`, CreateTime: t, ServerName: "late" },
      };
    }
  }
}
