import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { matchesEtag } from './etag.ts';
import { type AnswerSwitch, KeptAnswers } from './kept-answers.ts';
import type { AnswerKeeper, KeptRoute } from './kept-routes.ts';

// Answers that can no longer change (a completed run's results, PERF-2), kept as bytes: built and
// serialised once, compressed once per encoding on first demand, and sent with a strong ETag.

const gzip = promisify(zlib.gzip);
const brotli = promisify(zlib.brotliCompress);

type Encoding = 'br' | 'gzip' | 'identity';
/** Server preference when the client accepts several equally: smallest first. */
const ENCODINGS: Encoding[] = ['br', 'gzip', 'identity'];

interface Frozen {
  /** The identity body's strong ETag; encoded bodies get a suffix, as their bytes differ. */
  etag: string;
  bodies: Map<Encoding, Promise<Buffer>>;
  bytes: number;
}

export class FrozenAnswers implements AnswerKeeper {
  readonly #kept: KeptAnswers<Frozen>;

  /** `capacity` in bytes over all bodies kept; 0 keeps nothing. */
  constructor(capacity: number, keeping?: AnswerSwitch) {
    this.#kept = new KeptAnswers(capacity, (frozen) => frozen.bytes, keeping);
  }

  /**
   * The route's protocol (kept-routes.ts): the kept bytes for the route's key, else `produce`'s answer,
   * frozen and kept when `when` says it can no longer change, else sent as it is.
   */
  respond(request: FastifyRequest, reply: FastifyReply, { key: keyOf, produce, when }: KeptRoute): Promise<unknown> {
    const key = keyOf(request);
    const kept = this.#kept.get(key);
    if (kept) return sendFrozen(request, reply, key, kept, this);
    const ticket = this.#kept.ticket();
    return Promise.resolve(produce(request, reply)).then((answer) => {
      if (when !== undefined && !when(answer as never)) return answer;
      return sendFrozen(request, reply, key, this.store(key, JSON.stringify(answer), ticket), this);
    });
  }

  /** Taken before the answer is read; `store` refuses an answer read across an `invalidate`. */
  ticket(): number {
    return this.#kept.ticket();
  }

  get(key: string): Frozen | undefined {
    return this.#kept.get(key);
  }

  /** Keeps the JSON text of an answer that will not change; the oldest entries make room. */
  store(key: string, json: string, ticket: number): Frozen {
    const identity = Buffer.from(json, 'utf8');
    const frozen: Frozen = {
      etag: `"${createHash('sha256').update(identity).digest('base64url').slice(0, 32)}"`,
      bodies: new Map([['identity', Promise.resolve(identity)]]),
      bytes: identity.length,
    };
    this.#kept.store(key, frozen, ticket);
    return frozen;
  }

  /** The body in `encoding`, compressed on first demand and kept with the entry. */
  body(key: string, frozen: Frozen, encoding: Encoding): Promise<Buffer> {
    let body = frozen.bodies.get(encoding);
    if (body) return body;
    const identity = frozen.bodies.get('identity') as Promise<Buffer>;
    body = identity.then((bytes) =>
      encoding === 'br'
        ? brotli(bytes, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 9, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } })
        : gzip(bytes, { level: 9 }),
    );
    frozen.bodies.set(encoding, body);
    void body.then((bytes) => {
      frozen.bytes += bytes.length;
      this.#kept.grew(key, frozen, bytes.length);
    });
    return body;
  }

  /** Something kept may have changed: forget everything, and refuse answers read before now. */
  invalidate(): void {
    this.#kept.forgetAll();
  }

  get size(): { entries: number; bytes: number } {
    return this.#kept.size;
  }
}

/**
 * Sends a frozen answer in the best encoding the client accepts (`Accept-Encoding`, q-values
 * respected; identity when it accepts none of ours), or 304 when `If-None-Match` names its ETag.
 */
export async function sendFrozen(request: FastifyRequest, reply: FastifyReply, key: string, frozen: Frozen, answers: FrozenAnswers) {
  const header = request.headers['accept-encoding'];
  const chosen = header === undefined ? 'identity' : (request.accepts().encoding(ENCODINGS) as Encoding | false);
  const encoding: Encoding = chosen || 'identity';
  const etag = encoding === 'identity' ? frozen.etag : `${frozen.etag.slice(0, -1)}-${encoding}"`;
  reply.header('vary', 'accept-encoding');
  reply.header('etag', etag);
  // The client may keep it, but asks again each time: the ETag makes that a 304.
  reply.header('cache-control', 'private, no-cache');
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch !== undefined && matchesEtag(ifNoneMatch, etag)) return reply.code(304).send();
  const body = await answers.body(key, frozen, encoding);
  if (encoding !== 'identity') reply.header('content-encoding', encoding);
  reply.type('application/json; charset=utf-8');
  return reply.send(body);
}
