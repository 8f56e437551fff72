// s3rver for the tests (helpers/s3.ts), in a process of its own: the helper stops it with SIGKILL,
// as a store goes down, and starts it again on the same port and folder. It runs with
// --openssl-legacy-provider because s3rver encrypts its listing continuation tokens with DES.
// Arguments: the port (0: any free one) and the folder; prints the port it listens on.
import { createRequire } from 'node:module';
import S3rver from 's3rver';

// S3 percent-decodes x-amz-copy-source; s3rver decodes it with decodeURI, which leaves reserved
// characters encoded (`%2B` stays, where S3 reads '+'), so a correctly encoded source key with
// one is not found. Its copy handler (after its signature check) gets the header as decodeURI needs.
const objects = createRequire(import.meta.url)('s3rver/lib/controllers/object.js');
const copy = objects.putObjectCopy;
objects.putObjectCopy = (ctx) => {
  try {
    ctx.headers['x-amz-copy-source'] = encodeURI(decodeURIComponent(ctx.headers['x-amz-copy-source']));
  } catch {
    // Malformed: s3rver refuses it as it stands.
  }
  return copy(ctx);
};

const [port, directory] = process.argv.slice(2);
const server = new S3rver({ port: Number(port), address: '127.0.0.1', silent: true, directory });
const address = await server.run();
process.stdout.write(`${address.port}\n`);
// Gone with the test process that started it, however that ended.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 1000);
