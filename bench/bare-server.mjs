// Baseline: bare node:http sending exactly the bytes and headers it is given, or streaming a file.
// usage: node bare-server.mjs <port> body <file> <headers.json>   (the same bytes on every request)
//        node bare-server.mjs <port> stream <file> <content-type> (fs.createReadStream per request)
import fs from 'node:fs';
import http from 'node:http';

const [port, mode, file, extra] = process.argv.slice(2);
let handler;
if (mode === 'body') {
  const body = fs.readFileSync(file);
  const headers = { ...JSON.parse(fs.readFileSync(extra, 'utf8')), 'content-length': body.length };
  handler = (_request, response) => {
    response.writeHead(200, headers);
    response.end(body);
  };
} else {
  const size = fs.statSync(file).size;
  handler = (_request, response) => {
    response.writeHead(200, { 'content-type': extra, 'content-length': size });
    fs.createReadStream(file).pipe(response);
  };
}
http.createServer(handler).listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
