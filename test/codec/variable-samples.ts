import type { Envelope } from "../../streams/event-schema.ts";
import type { VariableApplied } from "../../streams/variables.ts";

const at = 1_763_800_000_000;
const by = { kind: "token", id: "6f1d0c2e-0000-4000-8000-00000000a11c", name: "ops" } as const;

/** The golden VariableApplied: a check-and-set write, sealed as the handler seals one. */
export const variableSamples: readonly Envelope<"VariableApplied", VariableApplied>[] = [
  {
    type: "VariableApplied",
    v: 1,
    at,
    by,
    data: {
      Op: "cas",
      Namespace: "default",
      Path: "nomad/jobs/web/frontend",
      Var: {
        Namespace: "default",
        Path: "nomad/jobs/web/frontend",
        // Not a real sealing: the codec only carries the string (nonce ‖ ciphertext ‖ tag, base64).
        Data: "AAECAwQFBgcICQoLc2VhbGVkIGl0ZW1zAAECAwQFBgcICQoLDA0ODw==",
        KeyID: "5b3e9a1c-2d4f-4e6a-8b7c-9d0e1f2a3b4c",
        CreateTime: at * 1e6,
        ModifyTime: at * 1e6,
      },
      CasIndex: 41,
    },
  },
];
