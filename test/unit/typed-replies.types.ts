import { type JsonReplyOf, jsonText } from '../../src/api/endpoint.ts';
import * as artifacts from '../../src/api/v1/artifacts.ts';
import * as devices from '../../src/api/v1/devices.ts';
import * as runs from '../../src/api/v1/runs.ts';
import type * as users from '../../src/api/v1/users.ts';
import * as webhooks from '../../src/api/v1/webhooks.ts';
import type { BlobDownload } from '../../src/server/blob/blob-store.ts';
import type { AppContext } from '../../src/server/context.ts';
import { noContent, route, sendJsonText, sentBlob, serializedReply } from '../../src/server/routes/route.ts';

// Handlers typed by their endpoint (SEC-9c), proved by the compiler: `tsc --noEmit` compiles this
// file with the project, and each `@ts-expect-error` below fails the build unless the handler under
// it is refused. Never run; test/unit/typed-replies.test.ts compiles a planted wrong handler too.

declare const ctx: AppContext;
declare const download: BlobDownload;
declare const device: JsonReplyOf<typeof devices.getDevice>;
declare const user: JsonReplyOf<typeof users.getUser>;
declare const run: JsonReplyOf<typeof runs.getRun>;
declare const delivery: JsonReplyOf<typeof webhooks.testWebhook>;

export const typedReplies = [
  // A value of the success schema, with or without a promise.
  route(devices.getDevice, { handler: async () => device }),
  route(devices.getDevice, { handler: () => device }),
  // @ts-expect-error a field of the wrong type: `status` is one of the schema's four
  route(devices.getDevice, { handler: async () => ({ ...device, status: 'broken' }) }),
  // @ts-expect-error a field missing: a device answer has a name
  route(devices.getDevice, { handler: async () => ({ ...device, name: undefined }) }),
  // @ts-expect-error another endpoint's reply
  route(devices.getDevice, { handler: async () => user }),
  // @ts-expect-error a 204 the endpoint does not declare
  route(devices.getDevice, { handler: async (_request, reply) => noContent(reply) }),

  // A 204 where it is declared; a body where only 204 is.
  route(devices.deleteDevice, { handler: async (_request, reply) => noContent(reply) }),
  // @ts-expect-error a body on a 204-only endpoint
  route(devices.deleteDevice, { handler: async () => device }),
  // Either, where both are declared.
  route(runs.claimRun, { handler: async (request, reply) => (request.body ? run : noContent(reply)) }),

  // A 202 body where 202 is declared, and the status set to it.
  route(webhooks.testWebhook, {
    handler: async (_request, reply) => {
      reply.code(202);
      return delivery;
    },
  }),
  route(devices.registerDevice, {
    handler: async (_request, reply) => {
      // @ts-expect-error a status the endpoint does not declare
      reply.code(202);
      return device;
    },
  }),

  // Downloads only where the success is one, and nothing else there.
  route(artifacts.getArtifactContent, { handler: (request, reply) => sentBlob(ctx, request, reply, download) }),
  // @ts-expect-error a download on a JSON endpoint
  route(devices.getDevice, { handler: (request, reply) => sentBlob(ctx, request, reply, download) }),
  // @ts-expect-error a JSON body on a download endpoint
  route(artifacts.getArtifactContent, { handler: async () => device }),

  // JSON text sent as it is, typed by the value it was made from.
  route(devices.getDevice, { handler: (_request, reply) => sendJsonText(reply, serializedReply(reply, device)) }),
  route(devices.getDevice, { handler: (_request, reply) => sendJsonText(reply, jsonText(device)) }),
  // @ts-expect-error JSON text of another reply
  route(devices.getDevice, { handler: (_request, reply) => sendJsonText(reply, jsonText(user)) }),
  // @ts-expect-error a string is not JSON text of a reply
  route(devices.getDevice, { handler: (_request, reply) => sendJsonText(reply, '{}') }),

  // Sending is not the handler's: only the senders above answer for it.
  route(devices.getDevice, {
    handler: async (_request, reply) => {
      // @ts-expect-error `send` is not on the handler's reply
      return reply.send(device);
    },
  }),
];
