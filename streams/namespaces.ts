import { type Envelope, schemas } from "./event-schema.ts";

/** Nomad's Namespace, as the API shows it (without the indexes). */
export interface NamespaceSpec {
  readonly Name: string;
  readonly Description: string;
  readonly Quota: string;
  readonly Meta: Readonly<Record<string, string>> | null;
  readonly Capabilities: {
    readonly EnabledTaskDrivers: readonly string[];
    readonly DisabledTaskDrivers: readonly string[];
  } | null;
}

export interface NamespaceUpserted {
  readonly Namespace: NamespaceSpec;
}

export interface NamespaceDeleted {
  readonly Name: string;
}

export type NamespaceEvent =
  | Envelope<"NamespaceUpserted", NamespaceUpserted>
  | Envelope<"NamespaceDeleted", NamespaceDeleted>;

export const namespaceSchemas = schemas(
  { type: "NamespaceUpserted", version: 1 },
  { type: "NamespaceDeleted", version: 1 },
);
