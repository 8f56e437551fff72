/** One thing to send. Items are sent one at a time, in the order they were queued. */
export interface QueueItem {
  /** What it counts as when dropped: `step`, `attachment`, … */
  kind: string;
  /** Job, run and run-completion items are never dropped to make room: everything else hangs on them. */
  essential: boolean;
  /** Bytes it holds or will read (attachments); 0 for the rest. */
  bytes: number;
  send(): Promise<void>;
  /** Takes the next queued item into this one when they can go as one call (consecutive results of a run). */
  absorb?(next: QueueItem): boolean;
  /** Told when the item is dropped for room, so dependants can tell (a dropped step's children). */
  dropped?(): void;
}

export interface QueueLimits {
  maxItems: number;
  maxBytes: number;
}

/**
 * The reporter's single ordered send queue. Playwright's callbacks only push; one worker sends.
 * It is bounded: over `maxItems` items the oldest non-essential item is dropped, over `maxBytes`
 * of attachments the oldest attachment, each counted, so a slow server costs memory up to the
 * bounds and never blocks a test.
 */
export class SendQueue {
  readonly drops = new Map<string, number>();
  private readonly items: QueueItem[] = [];
  private bytes = 0;
  private running: Promise<void> | undefined;
  private closed = false;
  private readonly limits: QueueLimits;
  private readonly onError: (error: unknown) => void;

  constructor(limits: QueueLimits, onError: (error: unknown) => void) {
    this.limits = limits;
    this.onError = onError;
  }

  push(item: QueueItem): void {
    if (this.closed) {
      this.drop(item);
      return;
    }
    this.items.push(item);
    this.bytes += item.bytes;
    while (this.items.length > this.limits.maxItems && this.dropOldest((i) => !i.essential));
    while (this.bytes > this.limits.maxBytes && this.dropOldest((i) => i.bytes > 0));
    this.running ??= this.work();
  }

  /** Resolves when everything queued so far is sent (or failed). */
  async drained(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Gives up on everything still queued (the flush deadline passed) and answers how much that was; nothing new is taken. */
  close(): number {
    this.closed = true;
    const left = this.items.splice(0);
    this.bytes = 0;
    return left.length;
  }

  private async work(): Promise<void> {
    for (let item = this.items.shift(); item; item = this.items.shift()) {
      this.bytes -= item.bytes;
      while (this.items[0] && item.absorb?.(this.items[0])) this.bytes -= this.items.shift()!.bytes;
      try {
        await item.send();
      } catch (error) {
        this.onError(error);
      }
    }
    this.running = undefined;
  }

  private dropOldest(droppable: (item: QueueItem) => boolean): boolean {
    const index = this.items.findIndex(droppable);
    if (index === -1) return false;
    const [item] = this.items.splice(index, 1);
    this.bytes -= item!.bytes;
    this.drop(item!);
    return true;
  }

  private drop(item: QueueItem): void {
    this.drops.set(item.kind, (this.drops.get(item.kind) ?? 0) + 1);
    item.dropped?.();
  }
}
