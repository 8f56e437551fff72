import type { TestServer } from './server.ts';
import { waitFor } from './wait.ts';

/** The parsed JSON log lines of the server (a chunk may hold several lines). */
export function logEntries(server: Pick<TestServer, 'logs'>): Record<string, unknown>[] {
  return server.logs
    .join('')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * Waits until the server has logged the end of each request named by its id (the `x-request-id` it
 * answered with): Fastify's `request completed` line, the last one a request writes. After that, a
 * check that the logs do NOT hold something covers those requests whole.
 */
export async function waitForRequestLogs(server: Pick<TestServer, 'logs'>, requestIds: string[]): Promise<void> {
  const missing = () => {
    const done = new Set(
      logEntries(server)
        .filter((entry) => entry.msg === 'request completed')
        .map((entry) => String(entry.reqId)),
    );
    return requestIds.filter((id) => !done.has(id));
  };
  await waitFor(() => missing().length === 0, { message: () => `the server logged the end of requests ${missing().join(', ')}` });
}

/** Waits until a log line satisfies `match`, and returns it (raw text). */
export function waitForLogLine(server: Pick<TestServer, 'logs'>, match: (line: string) => boolean, what: string): Promise<string> {
  return waitFor(() => server.logs.join('').split('\n').find(match), { message: `a log line ${what}` });
}
