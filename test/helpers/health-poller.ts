import { Worker } from 'node:worker_threads';

// Polls a server's health route from a worker thread of the test process, so what it measures is
// the server's answer time, not the test's own event loop (which is busy sending a 60 MB body).

export interface HealthSample {
  /** When the poll was sent, in ms since the poller started. */
  at: number;
  /** From sending the request to the answer's last byte. */
  ms: number;
  status: number;
}

const POLLER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const samples = [];
let running = true;
parentPort.on('message', () => { running = false; });
let started = performance.now();
const poll = () => new Promise((resolve) => {
  const at = performance.now();
  const request = http.get(workerData.url, { agent, headers: { accept: 'application/json' } }, (response) => {
    response.resume();
    response.on('end', () => resolve({ at: at - started, ms: performance.now() - at, status: response.statusCode }));
  });
  request.on('error', () => resolve({ at: at - started, ms: performance.now() - at, status: 0 }));
});
(async () => {
  // One poll first, not counted: the first request of a thread loads and compiles the HTTP client.
  await poll();
  started = performance.now();
  parentPort.postMessage('ready');
  while (running) {
    samples.push(await poll());
    // The sampling period.
    await new Promise((resolve) => setTimeout(resolve, workerData.intervalMs));
  }
  agent.destroy();
  parentPort.postMessage(samples);
})();
`;

/**
 * Starts polling `url` every `intervalMs`, and resolves once the poller is warm (its first, uncounted
 * poll answered); `stop()` resolves with every sample taken after it.
 */
export async function pollHealth(url: string, intervalMs = 50): Promise<{ stop(): Promise<HealthSample[]> }> {
  const worker = new Worker(POLLER, { eval: true, workerData: { url, intervalMs } });
  let ready!: () => void;
  const warm = new Promise<void>((resolve) => {
    ready = resolve;
  });
  const result = new Promise<HealthSample[]>((resolve, reject) => {
    worker.on('message', (message: 'ready' | HealthSample[]) => (message === 'ready' ? ready() : resolve(message)));
    worker.once('error', reject);
  });
  await Promise.race([warm, result]);
  return {
    async stop() {
      worker.postMessage('stop');
      const samples = await result;
      await worker.terminate();
      return samples;
    },
  };
}

/** A line for the test's diagnostics: how many polls, the slowest, and the median. */
export function describeSamples(samples: readonly HealthSample[]): string {
  const times = samples.map((s) => s.ms).sort((a, b) => a - b);
  const pick = (q: number) => (times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0).toFixed(1);
  return `${samples.length} polls: median ${pick(0.5)} ms, p99 ${pick(0.99)} ms, slowest ${pick(1)} ms`;
}
