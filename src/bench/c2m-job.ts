/** How big each of a C2M job's tasks is, and how many an allocation runs. */
export interface C2mShape {
  readonly cpu?: number;
  readonly memoryMB?: number;
  readonly tasks?: number;
}

/**
 * A C2M-style service job, as the scheduler benchmarks place it: one group
 * of small docker tasks (one, unless told), no deployments. The body of
 * `PUT /v1/jobs`'s `Job`.
 */
export function c2mJob(id: string, count: number, shape: C2mShape = {}): Record<string, unknown> {
  const { cpu = 50, memoryMB = 30, tasks = 1 } = shape;
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
        Tasks: Array.from({ length: tasks }, (_, i) => ({
          Name: tasks === 1 ? "t" : `t${i}`,
          Driver: "docker",
          Config: { image: "alpine:3.19" },
          Resources: { CPU: cpu, MemoryMB: memoryMB },
          // Small enough for the 10 MB disk (Nomad: logs must fit in it with room to spare).
          LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
        })),
      },
    ],
  };
}
