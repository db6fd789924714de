import type { FastifyInstance } from "fastify";

/** Nomad answers a known path with the wrong method 405 "Invalid method". */
export function refuseOtherMethods(app: FastifyInstance, url: string, allowed: readonly string[]): void {
  const others = ["GET", "PUT", "POST", "DELETE", "PATCH"].filter((m) => !allowed.includes(m));
  app.route({
    method: others as ("GET" | "PUT" | "POST" | "DELETE" | "PATCH")[],
    url,
    // Answered before any ACL check, as Nomad's handlers check the method first.
    config: { methodRefusal: true },
    handler: async (_request, reply) =>
      reply.status(405).type("text/plain; charset=utf-8").send("Invalid method"),
  });
}
