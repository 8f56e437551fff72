import type { FastifyReply, FastifyRequest } from 'fastify';
import { type AnswerSwitch, KeptAnswers, textBytes } from './kept-answers.ts';

// The cache protocol of a route that keeps its answer (PERF-8): the route names what it keeps
// (`RouteImpl.keeps`: which keeper, under which key, and when), its handler only computes the
// answer, and the contract plugin wraps it with `keptHandler`. The keeper runs get, ticket, store
// and the send; no route does it by hand.

/** A keeper of whole answers: serves the kept one for the route's `key`, else its `produce(request, reply)`'s, kept when `when` says. */
export interface AnswerKeeper {
  respond(request: FastifyRequest, reply: FastifyReply, route: KeptRoute): FastifyReply | Promise<unknown>;
}

/** A keeping route as its keeper sees it, put together once when the route is registered. */
export interface KeptRoute {
  key: (request: FastifyRequest) => string;
  /** The route's own handler, run on a miss. */
  produce: (request: FastifyRequest, reply: FastifyReply) => unknown;
  when: ((answer: never) => boolean) | undefined;
}

/** What a route keeps: its answers, by a key read from the (validated) request, and which ones. */
export interface Keeps<Request = FastifyRequest, Answer = unknown> {
  /** The keeper: the context's `deviceAnswers` (JSON text) or `frozenResults` (bytes with an ETag). */
  in: AnswerKeeper;
  key: (request: Request) => string;
  /** Whether an answer is kept; every one when absent. One not kept is sent as the handler answered it. */
  when?: (answer: Answer) => boolean;
}

/** The handler of a route that keeps its answers: the keeper first, the route's own handler on a miss. */
export function keptHandler(
  keeps: Keeps<never, never>,
  handler: (request: never, reply: FastifyReply) => unknown,
): (request: FastifyRequest, reply: FastifyReply) => FastifyReply | Promise<unknown> {
  const { in: keeper, key, when } = keeps as unknown as Keeps;
  const route: KeptRoute = { key, produce: handler as KeptRoute['produce'], when };
  return (request, reply) => keeper.respond(request, reply, route);
}

/** A JSON answer serialised before: sent as it is. */
const sendJsonText = (reply: FastifyReply, text: string) => reply.type('application/json; charset=utf-8').send(text);

/**
 * Answers kept as the JSON text the route's own schema serialised (the device answers, PERF-5). A
 * kept answer goes out in the same tick, with no promise (5% of the device read's CPU when it was
 * an async handler); anything else waits for the handler.
 */
export class KeptTexts implements AnswerKeeper {
  readonly #kept: KeptAnswers<string>;

  /** `capacity` in bytes (UTF-16 code units × 2); 0 keeps nothing. */
  constructor(capacity: number, keeping?: AnswerSwitch) {
    this.#kept = new KeptAnswers(capacity, textBytes, keeping);
  }

  get(key: string): string | undefined {
    return this.#kept.get(key);
  }

  respond(request: FastifyRequest, reply: FastifyReply, { key: keyOf, produce, when }: KeptRoute): FastifyReply | Promise<unknown> {
    const key = keyOf(request);
    const kept = this.#kept.get(key);
    if (kept !== undefined) return sendJsonText(reply, kept);
    const ticket = this.#kept.ticket();
    return Promise.resolve(produce(request, reply)).then((answer) => {
      const text = reply.serialize(answer) as string;
      if (when === undefined || when(answer as never)) this.#kept.store(key, text, ticket);
      return sendJsonText(reply, text);
    });
  }

  forget(key: string): void {
    this.#kept.forget(key);
  }

  forgetAll(): void {
    this.#kept.forgetAll();
  }

  get size(): { entries: number; bytes: number } {
    return this.#kept.size;
  }
}
