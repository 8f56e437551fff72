import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How long, and how much, a refused request's body is still read after the answer (LOAD-4b). */
export interface LingerLimits {
  /** Longest time the body is read after the answer (`ATTEST_LINGER_MS`); 0 closes at once. */
  lingerMs: number;
  /** Longest pause between two reads of it (`ATTEST_LINGER_IDLE_MS`). */
  lingerIdleMs: number;
  /** Most bytes read of it (`ATTEST_LINGER_MAX_BYTES`). */
  lingerMaxBytes: number;
}

/**
 * Lingering close, as nginx does it (LOAD-4b). A request refused before its body was read to the end
 * is answered with `Connection: close`, and Node then closes the socket as soon as the answer is
 * written. Closing a socket with unread bytes makes the kernel send a reset instead of a FIN, and a
 * reset also throws away what the client has received but not yet read: a client still sending its
 * body (Node's fetch, Python's requests, nginx forwarding to Attest) reports EPIPE or a reset, or
 * nginx a 502, instead of the 401 or 403 that was sent.
 *
 * So the close Node would do is replaced, for this one socket: the answer goes out and the sending
 * side is shut (a FIN after the answer); the rest of the body is then read and discarded until it
 * ends or the client closes its side, and only then is the socket closed. A client that keeps
 * sending is cut off all the same after `lingerMs`, after `lingerIdleMs` without a byte, or after
 * `lingerMaxBytes` bytes; and the request deadline (`ATTEST_REQUEST_TIMEOUT_MS`) still applies, as
 * Node's check of it closes the socket of a request not received in time (the client-error handler
 * destroys a socket it can no longer write to).
 *
 * Node calls `socket.destroySoon()` after the last answer on a connection (`Connection: close`);
 * that is the one place the close can be taken over, so it is replaced on the socket itself.
 */
export function lingerAfterAnswer(request: IncomingMessage, limits: LingerLimits, lingering: Set<Socket>): void {
  const socket = request.socket as Socket | null;
  if (limits.lingerMs === 0 || !socket || socket.destroyed) return;
  socket.destroySoon = () => linger(socket, request, limits, lingering);
}

/**
 * Ends every lingering close at once: a server shutting down does not wait for bodies it refused.
 * Called before the server stops listening, so graceful shutdown waits only for requests it serves.
 */
export function endLingering(lingering: Set<Socket>): void {
  for (const socket of lingering) socket.destroy();
  lingering.clear();
}

function linger(socket: Socket, request: IncomingMessage, limits: LingerLimits, lingering: Set<Socket>): void {
  // The body ended meanwhile: nothing is left in flight, and the socket closes as Node would close it.
  if (request.complete || request.destroyed) {
    closeWhenWritten(socket);
    return;
  }
  const total = setTimeout(() => socket.destroy(), limits.lingerMs);
  const idle = setTimeout(() => socket.destroy(), Math.min(limits.lingerIdleMs, limits.lingerMs));
  let read = 0;
  // Counted on the socket: once the answer is out, Node's parser drops the body's bytes rather than
  // handing them to the request (it is "dumped"), but it still ends the request at the body's end.
  const onData = (chunk: Buffer): void => {
    read += chunk.length;
    if (read > limits.lingerMaxBytes) socket.destroy();
    else idle.refresh();
  };
  // Every byte in: the body's end (or the client's FIN) leaves nothing unread, so the close is a FIN.
  const done = (): void => closeWhenWritten(socket);
  lingering.add(socket);
  socket.once('close', () => {
    lingering.delete(socket);
    clearTimeout(total);
    clearTimeout(idle);
    socket.off('data', onData);
    request.off('end', done);
  });
  socket.on('data', onData);
  socket.once('end', done);
  request.once('end', done);
  // Whatever was reading the body (a multipart parser that gave up) lets go of it, and it is drained.
  request.unpipe();
  request.removeAllListeners('data');
  request.resume();
  // The answer, then a FIN; an HTTP server's sockets are half-open, so reading goes on.
  socket.end();
}

/** Closes the socket once what was written to it has been handed to the kernel (a close never drops the answer). */
function closeWhenWritten(socket: Socket): void {
  if (socket.writableFinished) {
    socket.destroy();
    return;
  }
  socket.end();
  socket.once('finish', () => socket.destroy());
}

/** Node's own flag on a response: whether `100 Continue` went out. */
type ContinuingResponse = ServerResponse & { _sent100?: boolean };

/**
 * `Expect: 100-continue` is answered only once the request passed the checks that refuse it
 * (LOAD-4c). Node answers `100 Continue` by itself as soon as the headers arrive unless the server
 * handles `checkContinue`; then a client that waits for it (curl does, for bodies over 1 KB) sends
 * its whole body even when the answer is a 401. Here the `100 Continue` goes out when something
 * first reads the body: a JSON body is read after authentication and the role check, a multipart
 * upload only in its handler, after the project's visibility and the rate limit (its quota is
 * checked after the metadata part). A request refused before that gets its final answer without
 * `100 Continue`, and the client never sends the body (Node then closes the connection, since the
 * client may still send it).
 */
export function continueWhenBodyIsRead(server: Server): void {
  server.on('checkContinue', (request: IncomingMessage, response: ContinuingResponse) => {
    const read = request._read;
    request._read = function continueThenRead(this: IncomingMessage, size: number): void {
      request._read = read;
      if (!response.headersSent && !response._sent100) response.writeContinue();
      read.call(this, size);
    };
    server.emit('request', request, response);
  });
}
