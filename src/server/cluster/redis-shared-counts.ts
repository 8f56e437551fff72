import { Redis, type Result } from 'ioredis';
import type { Backoff, SharedCounts, StoredCount } from '../security/shared-counts.ts';

// A count is a hash: `c` the count, `a` its time, `e` when it lapses (the callers' clock, in ms).
// Redis expires the key a little after that as well, so nothing is left behind; whether a count
// lapsed is decided on the caller's time, as on PostgreSQL.

/** Adds ARGV[1] to the window at KEYS[1] (opening one at ARGV[2] that lapses at ARGV[3] if none is open); answers count and start. */
const ADD_TO_WINDOW = `
local kept = redis.call('HMGET', KEYS[1], 'c', 'a', 'e')
if kept[1] == false or tonumber(kept[3]) <= tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], 'c', ARGV[1], 'a', ARGV[2], 'e', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return {tonumber(ARGV[1]), ARGV[2]}
end
return {redis.call('HINCRBY', KEYS[1], 'c', ARGV[1]), kept[2]}`;

/** Adds one to the run at KEYS[1] (a lapsed one starts again), its latest event now ARGV[1], lapsing at ARGV[2]; answers the count. */
const ADD_TO_RUN = `
local kept = redis.call('HMGET', KEYS[1], 'c', 'e')
local count = 1
if kept[1] ~= false and tonumber(kept[2]) > tonumber(ARGV[1]) then count = tonumber(kept[1]) + 1 end
redis.call('HSET', KEYS[1], 'c', count, 'a', ARGV[1], 'e', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return count`;

/**
 * ADD_TO_RUN, only when the run's wait is over: none below ARGV[4] events, then ARGV[5] ms doubling
 * per event beyond, at most ARGV[6], after its latest event. Answers 1 when added, 0 while waiting.
 */
const ADD_TO_RUN_AFTER_WAIT = `
local kept = redis.call('HMGET', KEYS[1], 'c', 'a', 'e')
local now = tonumber(ARGV[1])
local count = 1
if kept[1] ~= false and tonumber(kept[3]) > now then
  local hits = tonumber(kept[1])
  local free = tonumber(ARGV[4])
  if hits >= free then
    local wait = math.min(tonumber(ARGV[5]) * 2 ^ math.min(hits - free, 16), tonumber(ARGV[6]))
    if tonumber(kept[2]) + wait > now then return 0 end
  end
  count = hits + 1
end
redis.call('HSET', KEYS[1], 'c', count, 'a', ARGV[1], 'e', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`;

/** Adds one to the count at KEYS[1] when it has not lapsed by ARGV[1] and is below ARGV[2]; answers 1 when added. */
const ADD_IF_BELOW = `
local kept = redis.call('HMGET', KEYS[1], 'c', 'e')
if kept[1] == false or tonumber(kept[2]) <= tonumber(ARGV[1]) or tonumber(kept[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('HINCRBY', KEYS[1], 'c', 1)
return 1`;

/** Takes one from the count at KEYS[1] when it is above zero and has not lapsed by ARGV[1]. */
const SUBTRACT_IF_PRESENT = `
local kept = redis.call('HMGET', KEYS[1], 'c', 'e')
if kept[1] == false or tonumber(kept[2]) <= tonumber(ARGV[1]) or tonumber(kept[1]) <= 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'c', -1)
return 1`;

const ADD_IF_PRESENT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HINCRBY', KEYS[1], 'c', 1) end
return 0`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    attestAddToWindow(key: string, add: number, nowMs: number, lapsesMs: number, ttlMs: number): Result<[number, string], Context>;
    attestAddToRun(key: string, nowMs: number, lapsesMs: number, ttlMs: number): Result<number, Context>;
    attestAddIfPresent(key: string): Result<number, Context>;
    attestAddToRunAfterWait(
      key: string,
      nowMs: number,
      lapsesMs: number,
      ttlMs: number,
      free: number,
      baseMs: number,
      maxMs: number,
    ): Result<number, Context>;
    attestAddIfBelow(key: string, nowMs: number, limit: number): Result<number, Context>;
    attestSubtractIfPresent(key: string, nowMs: number): Result<number, Context>;
  }
}

/** Redis keeps a key this much longer than its count lives, so a caller's clock a little ahead of Redis's never loses it early. */
const EXPIRY_SLACK_MS = 60_000;

/**
 * The shared counts in Redis (`ATTEST_REDIS_URL`, SCALE-4): each operation is one Lua script,
 * atomic on the server, and a batch of windows is one pipelined round trip. Keys start with
 * `prefix`, which names the service (its database), so several services, or test runs, can share
 * one Redis. While Redis is unreachable, commands fail at once rather than queue (the limits then
 * count in each instance, see shared-limits.ts), and the client connects again by itself.
 */
export class RedisSharedCounts implements SharedCounts {
  readonly #redis: Redis;

  constructor(
    url: string,
    private readonly prefix: string,
    onError: (error: unknown) => void,
  ) {
    this.#redis = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 5000,
      commandTimeout: 2000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 5000),
    });
    this.#redis.on('error', onError);
    this.#redis.defineCommand('attestAddToWindow', { numberOfKeys: 1, lua: ADD_TO_WINDOW });
    this.#redis.defineCommand('attestAddToRun', { numberOfKeys: 1, lua: ADD_TO_RUN });
    this.#redis.defineCommand('attestAddIfPresent', { numberOfKeys: 1, lua: ADD_IF_PRESENT });
    this.#redis.defineCommand('attestAddToRunAfterWait', { numberOfKeys: 1, lua: ADD_TO_RUN_AFTER_WAIT });
    this.#redis.defineCommand('attestAddIfBelow', { numberOfKeys: 1, lua: ADD_IF_BELOW });
    this.#redis.defineCommand('attestSubtractIfPresent', { numberOfKeys: 1, lua: SUBTRACT_IF_PRESENT });
  }

  /** Connects (the server's start; a command never counts): an unreachable Redis fails the start. */
  async start(): Promise<void> {
    // The connection's own error says why (refused, unknown host); the rejection only that it closed.
    let cause: unknown;
    const noteCause = (error: unknown) => {
      cause ??= error;
    };
    this.#redis.on('error', noteCause);
    try {
      await this.#redis.connect();
    } catch (error) {
      this.#redis.disconnect();
      throw cause ?? error;
    } finally {
      this.#redis.off('error', noteCause);
    }
  }

  async close(): Promise<void> {
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }

  async addToWindows(additions: ReadonlyMap<string, number>, nowMs: number, windowMs: number): Promise<Map<string, StoredCount>> {
    const subjects = [...additions.keys()];
    const pipeline = this.#redis.pipeline();
    for (const subject of subjects) {
      pipeline.attestAddToWindow(
        this.prefix + subject,
        additions.get(subject) as number,
        nowMs,
        nowMs + windowMs,
        windowMs + EXPIRY_SLACK_MS,
      );
    }
    const results = (await pipeline.exec()) ?? [];
    const windows = new Map<string, StoredCount>();
    subjects.forEach((subject, i) => {
      const [error, reply] = results[i] ?? [new Error('no reply')];
      if (error) throw error;
      const [count, atMs] = reply as [number, string];
      windows.set(subject, { count, atMs: Number(atMs) });
    });
    return windows;
  }

  async addToRun(subject: string, nowMs: number, keepMs: number): Promise<StoredCount> {
    const count = await this.#redis.attestAddToRun(this.prefix + subject, nowMs, nowMs + keepMs, keepMs + EXPIRY_SLACK_MS);
    return { count, atMs: nowMs };
  }

  async addToRunAfterWait(subject: string, nowMs: number, keepMs: number, backoff: Backoff): Promise<boolean> {
    const { free, baseMs, maxMs } = backoff;
    const added = await this.#redis.attestAddToRunAfterWait(
      this.prefix + subject,
      nowMs,
      nowMs + keepMs,
      keepMs + EXPIRY_SLACK_MS,
      free,
      baseMs,
      maxMs,
    );
    return added === 1;
  }

  async addIfBelow(subject: string, limit: number, nowMs: number): Promise<boolean> {
    return (await this.#redis.attestAddIfBelow(this.prefix + subject, nowMs, limit)) === 1;
  }

  async subtractIfPresent(subject: string, nowMs: number): Promise<void> {
    await this.#redis.attestSubtractIfPresent(this.prefix + subject, nowMs);
  }

  async read(subject: string, nowMs: number): Promise<StoredCount | undefined> {
    const [count, atMs, lapsesMs] = await this.#redis.hmget(this.prefix + subject, 'c', 'a', 'e');
    if (count === null || atMs === null || lapsesMs === null || Number(lapsesMs) <= nowMs) return undefined;
    return { count: Number(count), atMs: Number(atMs) };
  }

  async put(subject: string, count: number, nowMs: number, keepMs: number): Promise<void> {
    const key = this.prefix + subject;
    const results = await this.#redis
      .multi()
      .hset(key, { c: count, a: nowMs, e: nowMs + keepMs })
      .pexpire(key, keepMs + EXPIRY_SLACK_MS)
      .exec();
    const failed = results?.find(([error]) => error)?.[0];
    if (failed) throw failed;
  }

  async addIfPresent(subject: string): Promise<void> {
    await this.#redis.attestAddIfPresent(this.prefix + subject);
  }

  async remove(subject: string): Promise<void> {
    await this.#redis.del(this.prefix + subject);
  }
}
