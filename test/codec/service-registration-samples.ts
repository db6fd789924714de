import type { Envelope } from "../../streams/event-schema.ts";
import type {
  ServiceRegistrationsDeleted,
  ServiceRegistrationsUpserted,
} from "../../streams/service-registrations.ts";

const at = 1_763_800_000_000;
const node = { kind: "node", id: "3c8e5d2a-1b4f-4a6e-9c7d-8e9f0a1b2c3d", name: "client-1" } as const;
const allocID = "b4e61df9-b095-d64e-f241-23860da1375f";

/** The golden service registration records: a client's upsert, and its delete when the task stops. */
export const serviceRegistrationSamples: readonly (
  | Envelope<"ServiceRegistrationsUpserted", ServiceRegistrationsUpserted>
  | Envelope<"ServiceRegistrationsDeleted", ServiceRegistrationsDeleted>
)[] = [
  {
    type: "ServiceRegistrationsUpserted",
    v: 1,
    at,
    by: node,
    data: {
      Services: [
        {
          ID: `_nomad-task-${allocID}-redis-db-db`,
          ServiceName: "db",
          Namespace: "default",
          NodeID: node.id,
          Datacenter: "dc1",
          JobID: "example",
          AllocID: allocID,
          Tags: ["primary", "v7"],
          Address: "10.0.0.7",
          Port: 27_017,
        },
      ],
    },
  },
  {
    type: "ServiceRegistrationsDeleted",
    v: 1,
    at,
    by: node,
    data: {
      Services: [{ Namespace: "default", ID: `_nomad-task-${allocID}-redis-db-db` }],
      Reason: "client",
      NodeID: node.id,
    },
  },
];
