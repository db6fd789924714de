import { Readable } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from "fastify";
import { jsonArrayInSlices } from "../query/sliced-walk.ts";

/**
 * Lists longer than this are sent as a stream encoded in slices. Nomad
 * answers a list without `per_page` with every row, and clients rely on it,
 * so lists are not cut short; they are encoded without holding the loop.
 */
const SLICED_LIST_LENGTH = 1000;

/** Wraps a route's handler so that a long array it answers is encoded in slices (see jsonArrayInSlices). */
export function encodeLargeListsInSlices(route: RouteOptions): void {
  const handler = route.handler;
  route.handler = async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
    const body: unknown = await handler.call(this, request, reply);
    if (!Array.isArray(body) || body.length <= SLICED_LIST_LENGTH || reply.sent) return body;
    reply.type("application/json; charset=utf-8");
    return Readable.from(jsonArrayInSlices(body), { objectMode: false });
  };
}
