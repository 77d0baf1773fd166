import type { FastifyReply } from 'fastify';

/**
 * Responses whose body is a shared, frozen cache entry (an agent, a page of agents: db/changes.ts)
 * are serialized once per entry instead of once per request. The JSON is made by the route's own
 * compiled response serializer (`reply.serialize`, the response schema of the reply's status), so it
 * is exactly what Fastify would have sent; it is then sent as a string, which Fastify passes through.
 * Keyed by the entry object itself: a write replaces the entry, and the old JSON goes with it.
 * Use one instance per route (the serializer belongs to the route).
 */
export class SerializedOnce {
  private readonly json = new WeakMap<object, string>();

  send(reply: FastifyReply, value: object): FastifyReply {
    let json = this.json.get(value);
    if (json === undefined) {
      json = reply.serialize(value) as string;
      // Only an immutable value can be trusted to give the same JSON next time.
      if (Object.isFrozen(value)) this.json.set(value, json);
    }
    return reply.type('application/json; charset=utf-8').send(json);
  }
}
