import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request a receiver got, and whether its Standard Webhooks signature verified under the secret it was given. */
export interface Received {
  /** The path and query it was sent to (`/hook?slack`). */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The verified body, parsed; undefined when no secret was set yet or the signature did not verify. */
  verified: unknown;
  verifyError: string | undefined;
}

export interface WebhookReceiver {
  url: string;
  received: Received[];
  /** The secret deliveries are verified with (the one createWebhook answered). */
  secret: string | undefined;
  /** The statuses of the next answers, in order (then 204): `[500, 500]` fails twice; status 0 never answers. */
  answers: { status: number; headers?: Record<string, string> }[];
  close(): Promise<void>;
}

/**
 * A webhook receiver on 127.0.0.1, as a user would write one: it verifies every delivery with the
 * `standardwebhooks` package (not with Attest's code) and answers as the test scripts it.
 */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const receiver: WebhookReceiver = { url: '', received: [], secret: undefined, answers: [], close: async () => {} };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let verified: unknown;
      let verifyError: string | undefined;
      if (receiver.secret) {
        try {
          verified = new Webhook(receiver.secret).verify(body, req.headers as Record<string, string>);
        } catch (error) {
          verifyError = (error as Error).message;
        }
      }
      receiver.received.push({ path: req.url ?? '', headers: req.headers, body, verified, verifyError });
      const answer = receiver.answers.shift() ?? { status: 204 };
      if (answer.status === 0) return;
      res.writeHead(answer.status, answer.headers).end(answer.status === 204 ? undefined : 'receiver says no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  receiver.close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return receiver;
}
