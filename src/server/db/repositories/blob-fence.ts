import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type BlobFence, BlobStorageError } from '../../blob/blob-store.ts';
import type { DB } from '../types.ts';

export interface DatabaseBlobFenceOptions {
  /**
   * How long an upload's hold counts without being renewed: the garbage-collection grace period. The
   * instance renews its live holds every third of it, however long their uploads take (an import
   * holding its attachments until its last transaction, an upload waiting out a deletion), so a
   * hold only lapses once its instance is gone.
   */
  holdMs: number;
  /** How long a deletion's mark counts: well beyond what one deletion takes within the store's timeouts and retries. */
  deletionMs: number;
  /** How often an upload that met a deletion mark looks again; default 50 ms. */
  pollMs?: number;
  clock?: () => Date;
  log: { warn(details: object, message: string): void };
}

/** Expired rows are swept at most this often, by deletions (garbage collection). */
const SWEEP_INTERVAL_MS = 60_000;
/** Live holds renewed per statement, well within PostgreSQL's bind parameters. */
const RENEW_BATCH = 1000;

/**
 * The fence between uploads and garbage collection shared by every instance on one database and
 * one bucket (SCALE-2), the cross-instance form of `BlobHolds`, in table `blob_fences`. The order
 * is Dekker's: each side commits its own mark before it reads the other's, so of an upload and a
 * deletion of the same digest, whichever writes second sees the first.
 * - An upload commits a hold, then looks for a live deletion mark; while there is one it waits
 *   (the blob may be going: the store then writes it again), and proceeds once it is gone.
 * - A deletion commits its mark (one per digest: a second deletion gives way), then gives way
 *   to any live hold, then asks `stillGarbage`, removes the blob, and drops its mark.
 * Rows expire, so a dead instance's holds and marks stop counting; deletions sweep them. A live
 * instance renews its holds until they are released: a timer that runs only while it has some
 * (unreferenced, so it never keeps a process alive), so there is nothing to stop at shutdown.
 */
export class DatabaseBlobFence implements BlobFence {
  /** This instance, in the rows it writes. */
  readonly holder = randomUUID();
  private readonly holdMs: number;
  private readonly deletionMs: number;
  private readonly pollMs: number;
  private readonly clock: () => Date;
  private readonly log: DatabaseBlobFenceOptions['log'];
  private lastSweep = 0;
  /** Releases of this instance under way, by digest: a deletion here waits for them, so a released hold never blocks it. */
  private readonly releasing = new Map<string, Set<Promise<unknown>>>();
  /** This instance's holds not released yet, by row id: the ones it renews. */
  private readonly live = new Set<string>();
  private renewal: NodeJS.Timeout | undefined;
  private renewing = false;

  constructor(
    private readonly db: DB,
    options: DatabaseBlobFenceOptions,
  ) {
    this.holdMs = options.holdMs;
    this.deletionMs = options.deletionMs;
    this.pollMs = options.pollMs ?? 50;
    this.clock = options.clock ?? (() => new Date());
    this.log = options.log;
  }

  /** A database that cannot record the hold fails the upload as storage does (503), not as a bug. */
  async hold(sha256: string): Promise<() => void> {
    const id = randomUUID();
    try {
      await this.db
        .insertInto('blob_fences')
        .values({ id, sha256, kind: 'hold', holder: this.holder, expires_at: this.at(this.holdMs) })
        .execute();
    } catch (error) {
      throw new BlobStorageError('io', 'blob fence: recording an upload hold failed', { cause: error });
    }
    this.keepRenewing(id);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.stopRenewing(id);
      // Off the caller's path; a hold that is not deleted expires on its own.
      const pending = this.releasing.get(sha256) ?? new Set();
      this.releasing.set(sha256, pending);
      const deletion: Promise<unknown> = this.db
        .deleteFrom('blob_fences')
        .where('id', '=', id)
        .execute()
        .catch((error: unknown) => this.log.warn({ err: error, sha256 }, 'releasing a blob hold failed; it expires by itself'))
        .finally(() => {
          pending.delete(deletion);
          if (pending.size === 0 && this.releasing.get(sha256) === pending) this.releasing.delete(sha256);
        });
      pending.add(deletion);
    };
    try {
      while (await this.deletionUnderWay(sha256)) await sleep(this.pollMs);
    } catch (error) {
      release();
      throw new BlobStorageError('io', 'blob fence: reading deletion marks failed', { cause: error });
    }
    return release;
  }

  async delete(sha256: string, stillGarbage: () => Promise<boolean>, remove: () => Promise<boolean>): Promise<boolean> {
    await this.sweep();
    await Promise.all(this.releasing.get(sha256) ?? []);
    const id = randomUUID();
    const expires = this.clock().getTime() + this.deletionMs;
    // A mark a dead instance left on this digest counts for nothing; it goes so this one can be written.
    await this.db
      .deleteFrom('blob_fences')
      .where('sha256', '=', sha256)
      .where('kind', '=', 'deletion')
      .where('expires_at', '<=', this.at(0))
      .execute();
    const written = await this.db
      .insertInto('blob_fences')
      .values({ id, sha256, kind: 'deletion', holder: this.holder, expires_at: new Date(expires).toISOString() })
      .onConflict((oc) => oc.column('sha256').where('kind', '=', 'deletion').doNothing())
      .executeTakeFirst();
    // Another instance is deleting these bytes right now.
    if (Number(written.numInsertedOrUpdatedRows ?? 0) === 0) return false;
    try {
      const held = await this.db
        .selectFrom('blob_fences')
        .select('id')
        .where('sha256', '=', sha256)
        .where('kind', '=', 'hold')
        .where('expires_at', '>', this.at(0))
        .executeTakeFirst();
      if (held || !(await stillGarbage())) return false;
      // The removal must end while the mark still counts, or an upload could pass an expired mark
      // and find the blob being deleted: with less than half its time left, the blob stays for now.
      if (this.clock().getTime() > expires - this.deletionMs / 2) return false;
      return await remove();
    } finally {
      await this.db.deleteFrom('blob_fences').where('id', '=', id).execute();
    }
  }

  /** From the first live hold on, renews them all every third of `holdMs`. */
  private keepRenewing(id: string): void {
    this.live.add(id);
    if (this.renewal) return;
    this.renewal = setInterval(() => void this.renew(), Math.max(1, Math.floor(this.holdMs / 3)));
    this.renewal.unref();
  }

  /** After the last live hold's release, the timer goes. */
  private stopRenewing(id: string): void {
    this.live.delete(id);
    if (this.live.size > 0 || !this.renewal) return;
    clearInterval(this.renewal);
    this.renewal = undefined;
  }

  /** A renewal that fails is tried again at the next tick, while the holds still count (two ticks are left). */
  private async renew(): Promise<void> {
    if (this.renewing) return;
    this.renewing = true;
    try {
      const ids = [...this.live];
      for (let at = 0; at < ids.length; at += RENEW_BATCH) {
        await this.db
          .updateTable('blob_fences')
          .set({ expires_at: this.at(this.holdMs) })
          .where('holder', '=', this.holder)
          .where('kind', '=', 'hold')
          .where('id', 'in', ids.slice(at, at + RENEW_BATCH))
          .execute();
      }
    } catch (error) {
      this.log.warn({ err: error, holds: this.live.size }, 'renewing the blob holds of running uploads failed; trying again');
    } finally {
      this.renewing = false;
    }
  }

  private async deletionUnderWay(sha256: string): Promise<boolean> {
    const mark = await this.db
      .selectFrom('blob_fences')
      .select('id')
      .where('sha256', '=', sha256)
      .where('kind', '=', 'deletion')
      .where('expires_at', '>', this.at(0))
      .executeTakeFirst();
    return mark !== undefined;
  }

  /** Removes the rows whose time is up (a dead instance's), at most once a minute. */
  private async sweep(): Promise<void> {
    const now = this.clock().getTime();
    if (now - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    await this.db.deleteFrom('blob_fences').where('expires_at', '<=', this.at(0)).execute();
  }

  /** `ms` from now, as the rows store time (ISO-8601 UTC text, which sorts as time does). */
  private at(ms: number): string {
    return new Date(this.clock().getTime() + ms).toISOString();
  }
}
