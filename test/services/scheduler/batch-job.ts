/** A batch job of one group of `count` docker tasks, as the scheduler tests register it over the API. */
export function batchJob(id: string, { count = 1, cpu = 100 }: { count?: number; cpu?: number } = {}) {
  return {
    ID: id,
    Type: "batch",
    Datacenters: ["dc1"],
    TaskGroups: [
      {
        Name: "g",
        Count: count,
        EphemeralDisk: { SizeMB: 10 },
        Tasks: [
          {
            Name: "t",
            Driver: "docker",
            Config: { image: "batch" },
            Resources: { CPU: cpu, MemoryMB: 100 },
            LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
          },
        ],
      },
    ],
  };
}
