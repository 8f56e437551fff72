import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

// Public Node APIs only (docs/decisions.md): the server's `checkContinue` event,
// `response.writeContinue()`, the request's `resume`, `data` and `end` events, `unpipe()` and
// `resume()`, the socket's `close` event and `destroy()`. Nothing of Node's own is replaced or read.

/** How long, and how much, of a refused request's body is still read and dropped (LOAD-4b). */
export interface LingerLimits {
  /** Longest time the rest of the body is read (`ATTEST_LINGER_MS`); 0 closes at once. */
  lingerMs: number;
  /** Longest pause between two reads of it (`ATTEST_LINGER_IDLE_MS`). */
  lingerIdleMs: number;
  /** Most bytes read of it (`ATTEST_LINGER_MAX_BYTES`). */
  lingerMaxBytes: number;
}

/** Requests that were sent `100 Continue`. */
const continued = new WeakSet<IncomingMessage>();

/** Sockets whose request was answered while the rest of its body is still read and dropped, with that request. */
const draining = new WeakMap<Socket, IncomingMessage>();

/**
 * Whether the connection is reading and dropping the rest of a refused request's body: a client error
 * on it (the request deadline passing, the client ending part way) closes it and is never answered,
 * since the request has an answer of its own. Once the body has all been parsed, an error is the next
 * request's, even before the refused one's `end` event has run: a keep-alive client sends its next
 * request as soon as it has written the body, and Node may parse the body's end and that request's
 * head (and refuse it, say at 16 KB) in one read.
 */
export const drainsRefusedBody = (socket: Socket): boolean => draining.get(socket)?.complete === false;

/** Whether the client sent `Expect: 100-continue` and still waits for `100 Continue` before its body. */
function awaitsContinue(request: IncomingMessage): boolean {
  const expect = request.headers.expect;
  return expect !== undefined && request.httpVersion === '1.1' && /(?:^|\W)100-continue(?:$|\W)/i.test(expect) && !continued.has(request);
}

/**
 * Whether the connection closes after the answer whatever the server does: the client asked for it
 * (`Connection: close`, or HTTP/1.0 without `keep-alive`, RFC 9112 section 9.3). nginx talks to its
 * upstream that way by default, and so does Node's `http.request` without a keep-alive agent.
 */
function clientCloses(request: IncomingMessage): boolean {
  const options = (request.headers.connection ?? '').toLowerCase().split(',');
  const has = (token: string) => options.some((option) => option.trim() === token);
  return has('close') || (request.httpVersion === '1.0' && !has('keep-alive'));
}

/**
 * Lingering close, as nginx does it (LOAD-4b), for a request refused before its body was read to
 * the end; the caller then answers it. Closing a connection with unread bytes makes the kernel send
 * a reset instead of a FIN, and a reset also throws away what the client has received but not yet
 * read: a client still sending its body (Node's fetch, Python's requests, nginx forwarding to
 * Attest) would report EPIPE or a reset, or nginx a 502, instead of the 401 or 403 that was sent.
 * So the rest of the body is read and dropped, as long as the limits allow, and only then may the
 * connection close. Resolves with whether the answer must carry `Connection: close`, after which
 * Node closes the connection at once: with lingering off, and for a body declared larger than
 * `lingerMaxBytes`, which a linger could never drain.
 *
 * - A keep-alive connection (HTTP/1.1's default) gets its answer at once, without `Connection:
 *   close`: Node would close the socket right after such an answer. The body is drained behind it,
 *   and once it has ended the connection serves the client's next request like any other. A client
 *   still sending when a limit is crossed has its connection cut.
 * - A connection the client closes after the answer (`Connection: close`, HTTP/1.0: nginx by
 *   default) gets its answer after the body has been drained; Node then closes it with nothing
 *   unread. A limit crossed ends the wait, and the answer goes out then.
 * - A client that sent `Expect: 100-continue` and was not told to continue has sent no body: it gets
 *   its answer at once, and Node closes the connection (LOAD-4c).
 *
 * The limits: `lingerMs` in all, `lingerIdleMs` without a byte, `lingerMaxBytes` bytes; and the
 * request deadline (`ATTEST_REQUEST_TIMEOUT_MS`) still applies, as Node's check of it reports the
 * unfinished request as a client error, which closes a draining connection (`drainsRefusedBody`).
 * `lingering` holds the draining sockets, so a shutting-down server ends them (`endLingering`).
 */
export async function lingerBeforeAnswer(request: IncomingMessage, limits: LingerLimits, lingering: Set<Socket>): Promise<boolean> {
  const socket = request.socket as Socket | null;
  if (!socket || socket.destroyed) return false;
  // A body declared larger than the bytes a linger reads could never be drained: closed at once.
  if (limits.lingerMs === 0 || Number(request.headers['content-length']) > limits.lingerMaxBytes) return true;
  if (awaitsContinue(request)) return false;
  if (!clientCloses(request)) {
    drain(request, socket, limits, lingering, () => socket.destroy());
    return false;
  }
  await new Promise<void>((answer) => drain(request, socket, limits, lingering, answer, answer));
  return false;
}

/** Sockets answered on a client error (an oversized or unparsable request) that still read what the client sends. */
const refusedWhole = new WeakSet<Socket>();

/**
 * Whether the socket was answered on a client error and is reading and dropping what the client still
 * sends: Node hands each further chunk to its failed parser, which reports it as another client error.
 */
export const answeredClientError = (socket: Socket): boolean => refusedWhole.has(socket);

/**
 * Lingering close (LOAD-4b) for a request Node could not parse, answered on its raw socket with
 * `Connection: close` (`socket.end(answer)` just before): a 300 KB URL is refused at the first
 * 16 KB, while the client still sends the rest. Destroying the socket on those unread bytes would
 * make the kernel reset the connection, and the reset throws away the answer the client has not yet
 * read. So the socket keeps reading and dropping, within the same limits as a refused body, until
 * the client closes its side; a limit crossed, or lingering off, destroys it.
 */
export function lingerAfterClientError(socket: Socket, limits: LingerLimits, lingering: Set<Socket>): void {
  if (limits.lingerMs === 0) return;
  const watch = watchLinger(socket, limits, () => {
    stop();
    socket.destroy();
  });
  function stop(): void {
    watch.stop();
    lingering.delete(socket);
  }
  refusedWhole.add(socket);
  lingering.add(socket);
  socket.once('close', stop);
}

/**
 * Counts what `source` sends while a connection lingers: `overLimit` is called once when the
 * linger's time, its idle time or its bytes run out. `stop()` ends the watch.
 */
function watchLinger(source: NodeJS.EventEmitter, limits: LingerLimits, overLimit: () => void): { stop(): void } {
  const total = setTimeout(overLimit, limits.lingerMs);
  const idle = setTimeout(overLimit, Math.min(limits.lingerIdleMs, limits.lingerMs));
  let read = 0;
  const onData = (chunk: Buffer): void => {
    read += chunk.length;
    if (read > limits.lingerMaxBytes) overLimit();
    else idle.refresh();
  };
  source.on('data', onData);
  return {
    stop() {
      clearTimeout(total);
      clearTimeout(idle);
      source.off('data', onData);
    },
  };
}

/**
 * Ends every lingering close at once: a server shutting down does not wait for bodies it refused.
 * Called before the server stops listening, so graceful shutdown waits only for requests it serves.
 */
export function endLingering(lingering: Set<Socket>): void {
  for (const socket of lingering) socket.destroy();
  lingering.clear();
}

/**
 * Reads the request's body to its end and drops it. `overLimit` is called once when a limit is
 * crossed, `done` when the body has ended or the connection closed; either stops the watch.
 */
function drain(
  request: IncomingMessage,
  socket: Socket,
  limits: LingerLimits,
  lingering: Set<Socket>,
  overLimit: () => void,
  done: () => void = () => {},
): void {
  if (request.complete) {
    done();
    return;
  }
  const watch = watchLinger(request, limits, () => {
    stop();
    overLimit();
  });
  const ended = (): void => {
    stop();
    done();
  };
  function stop(): void {
    watch.stop();
    request.off('end', ended);
    socket.off('close', ended);
    // The next request's refusal may linger on the same socket (`lingerAfterClientError`): it stays for shutdown to end.
    if (!refusedWhole.has(socket)) lingering.delete(socket);
    draining.delete(socket);
  }
  lingering.add(socket);
  draining.set(socket, request);
  request.once('end', ended);
  socket.once('close', ended);
  // Whatever was reading the body (a multipart parser that gave up) lets go of it; the watch's data
  // listener keeps it flowing, so Node hands every chunk to it and the parser finds the body's end.
  request.unpipe();
  request.resume();
}

/**
 * `Expect: 100-continue` is answered only once the request passed the checks that refuse it
 * (LOAD-4c). Node answers `100 Continue` by itself as soon as the headers arrive unless the server
 * handles `checkContinue`; then a client that waits for it (curl does, for large bodies) sends its
 * whole body even when the answer is a 401. Here the `100 Continue` goes out when something first
 * reads the body, which is when the request starts flowing (its `resume` event: Fastify's body
 * parsers and the multipart reader both read it that way). A JSON body is read after
 * authentication and the role check, and after the body's size and type were accepted; a multipart
 * upload only in its handler, after the project's visibility and the rate limit (its quota is
 * checked after the metadata part). A request refused before that gets its final answer without
 * `100 Continue`; the client never sends the body, and Node closes the connection after the answer.
 */
export function continueWhenBodyIsRead(server: Server): void {
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    request.once('resume', () => {
      // A request answered first is resumed only to drop its body: too late for 100 Continue.
      if (response.headersSent || response.writableEnded) return;
      continued.add(request);
      response.writeContinue();
    });
    server.emit('request', request, response);
  });
}

/** Each socket's latest response (what Node itself keeps as a private field of the socket). */
const responses = new WeakMap<Socket, ServerResponse>();

/**
 * Remembers every socket's latest response, through the server's public `request` event (which
 * `checkContinue` above also emits). One map write a request; nothing listens for its end.
 */
export function trackResponses(server: Server): void {
  server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    responses.set(request.socket as Socket, response);
  });
}

/**
 * Whether an answer has begun on this socket and not finished: a client error must not write a
 * second status line into it.
 */
export function answerUnderWay(socket: Socket): boolean {
  const response = responses.get(socket);
  return response?.headersSent === true && !response.writableFinished;
}
