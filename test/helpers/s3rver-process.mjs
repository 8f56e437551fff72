// s3rver for the tests (helpers/s3.ts), in a process of its own: the helper stops it with SIGKILL,
// as a store goes down, and starts it again on the same port and folder. It runs with
// --openssl-legacy-provider because s3rver encrypts its listing continuation tokens with DES.
// Arguments: the port (0: any free one) and the folder; prints the port it listens on.
import S3rver from 's3rver';

const [port, directory] = process.argv.slice(2);
const server = new S3rver({ port: Number(port), address: '127.0.0.1', silent: true, directory });
const address = await server.run();
process.stdout.write(`${address.port}\n`);
// Gone with the test process that started it, however that ended.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 1000);
