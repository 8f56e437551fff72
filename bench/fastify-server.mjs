// Baseline: a minimal Fastify app serving the bytes and headers it is given as a conditional GET
// would: 304 with the same headers when If-None-Match names its ETag, else 200 with the body. The
// image 304's (F3) since the scale round (2026-11-28): what the framework itself costs for the
// same answer.
// usage: node fastify-server.mjs <port> <file> <headers.json>
import fs from 'node:fs';
import Fastify from 'fastify';

const [port, file, headersFile] = process.argv.slice(2);
const body = fs.readFileSync(file);
const headers = JSON.parse(fs.readFileSync(headersFile, 'utf8'));
const app = Fastify({ logger: false });
app.get('/*', (request, reply) => {
  reply.headers(headers);
  if (request.headers['if-none-match'] === headers.etag) return reply.code(304).send();
  return reply.send(body);
});
await app.listen({ port: Number(port), host: '127.0.0.1' });
process.stdout.write('ready\n');
