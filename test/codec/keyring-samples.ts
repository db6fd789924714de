import type { Envelope } from "../../streams/event-schema.ts";
import type { RootKeyCreated, RootKeyDeleted, RootKeyRekeyFinished } from "../../streams/keyring.ts";

const at = 1_763_800_000_000;
const leader = { kind: "server", id: "server-2", epoch: 7 } as const;
const operator = { kind: "token", id: "6f1d0c2e-0000-4000-8000-00000000a11c", name: "ops" } as const;

/** The keyring's records at their current versions (see event-samples.ts). */
export const keyringSamples: readonly Envelope[] = [
  {
    // An operator's `nomad operator root keyring rotate -full`.
    type: "RootKeyCreated",
    v: 2,
    at,
    by: operator,
    data: {
      Meta: {
        KeyID: "5b3e9a1c-2d4f-4e6a-8b7c-9d0e1f2a3b4c",
        Algorithm: "aes256-gcm",
        CreateTime: at * 1e6,
        State: "active",
      },
      SigningKey: { Algorithm: "EdDSA", Curve: "Ed25519", X: "ApIbeO5sT8LA3ZKYfKk3lMrLUrhnF7Ox-XB-DLdc25I" },
      // Not a real wrapping: the codec only carries the strings.
      Wrapped: {
        KekID: "0123456789abcdef",
        Nonce: "AAECAwQFBgcICQoL",
        Ciphertext: "c2VhbGVkIGtleSBieXRlcw==",
      },
      OnlyIfNoActiveKey: false,
      Rekey: true,
    } satisfies RootKeyCreated,
  },
  {
    type: "RootKeyRekeyFinished",
    v: 1,
    at,
    by: leader,
    cause: { index: 42, type: "RootKeyCreated" },
    data: { KeyID: "6c4f0b2d-3e5a-4f7b-9c8d-0e1f2a3b4c5d" } satisfies RootKeyRekeyFinished,
  },
  {
    // The leader's key GC.
    type: "RootKeyDeleted",
    v: 1,
    at,
    by: leader,
    data: { KeyID: "6c4f0b2d-3e5a-4f7b-9c8d-0e1f2a3b4c5d" } satisfies RootKeyDeleted,
  },
];
