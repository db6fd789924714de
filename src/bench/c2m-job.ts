/**
 * A C2M-style service job, as the scheduler benchmarks place it: one group
 * of small docker tasks, no deployments. The body of `PUT /v1/jobs`'s `Job`.
 */
export function c2mJob(id: string, count: number, cpu = 50): Record<string, unknown> {
  return {
    ID: id,
    Type: "service",
    Datacenters: ["dc1"],
    Update: { MaxParallel: 0 },
    TaskGroups: [
      {
        Name: "g",
        Count: count,
        EphemeralDisk: { SizeMB: 10 },
        Tasks: [
          {
            Name: "t",
            Driver: "docker",
            Config: { image: "alpine:3.19" },
            Resources: { CPU: cpu, MemoryMB: 30 },
            // Small enough for the 10 MB disk (Nomad: logs must fit in it with room to spare).
            LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
          },
        ],
      },
    ],
  };
}
