import { buildApp, onListening } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { EnvFileError, loadEnvFile } from './env-file.ts';
import { StartupError } from './errors.ts';

/** Reads the environment (and `.env`), starts the server, and shuts it down gracefully on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    loadEnvFile();
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    if (error instanceof EnvFileError) {
      process.stderr.write(`attest: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const app = await buildApp({ config });
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const timer = setTimeout(() => {
      app.log.error('graceful shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        app.log.error({ err: error }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  let address: string;
  try {
    address = await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    // Nothing was created yet: the first admin (and its key) waits for a start that can listen.
    await app.close().catch(() => {});
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'EADDRINUSE'
        ? 'the port is already in use (stop what holds it, or set PORT to another one)'
        : code === 'EACCES'
          ? 'permission denied (ports below 1024 need privileges; set PORT to another one)'
          : error instanceof Error
            ? error.message
            : String(error);
    process.stderr.write(`attest: cannot listen on ${config.host}:${config.port}: ${why}\n`);
    process.exit(1);
  }
  await onListening(app);
  // A stable line test harnesses and scripts parse for the bound port.
  process.stdout.write(`attest listening ${address}\n`);
}

main().catch((error: unknown) => {
  if (error instanceof StartupError || error instanceof ConfigError) {
    process.stderr.write(`attest: ${error.message}\n`);
  } else {
    process.stderr.write(`attest: failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
