/**
 * Work that outlives the request that started it (an import's job being written): run one task
 * at a time, in the order pushed, so a burst of uploads never competes with requests for more than
 * one task's worth of the database. `stop` waits for the running task, and runs no more.
 */
export class BackgroundTasks {
  private readonly queue: { name: string; task: () => Promise<void> }[] = [];
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly onError: (name: string, error: unknown) => void) {}

  push(name: string, task: () => Promise<void>): void {
    if (this.stopped) return;
    this.queue.push({ name, task });
    if (!this.running) this.running = this.drain();
  }

  /** Resolves when nothing is queued or running (tests wait on it). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.length = 0;
    await this.running;
  }

  get stopping(): boolean {
    return this.stopped;
  }

  private async drain(): Promise<void> {
    for (let next = this.queue.shift(); next && !this.stopped; next = this.queue.shift()) {
      try {
        await next.task();
      } catch (error) {
        this.onError(next.name, error);
      }
    }
    this.running = undefined;
  }
}
