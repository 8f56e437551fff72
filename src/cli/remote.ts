import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { ApiError, AttestClient, ClientConfigError, OLD_FORMAT_KEY } from '../client/index.ts';
import { APP_VERSION } from '../server/version.ts';
import { CliError } from './output.ts';

/** Where a remote command finds its instance and key; what `attest login` stores. */
export interface RemoteSettings {
  url: string;
  apiKey: string;
  /** The key's owner; sent as `service.user` with an old-format key only. */
  email?: string;
}

/** The folder `attest login` writes to: ATTEST_CONFIG_DIR, else the platform's user config folder. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ATTEST_CONFIG_DIR) return env.ATTEST_CONFIG_DIR;
  if (process.platform === 'win32' && env.APPDATA) return path.join(env.APPDATA, 'attest');
  if (process.platform === 'darwin') return path.join(os.homedir(), 'Library', 'Application Support', 'attest');
  return path.join(env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config'), 'attest');
}

export const configFile = () => path.join(configDir(), 'config.json');

export function readStoredSettings(): Partial<RemoteSettings> {
  try {
    const parsed = JSON.parse(fs.readFileSync(configFile(), 'utf8')) as Partial<RemoteSettings>;
    return typeof parsed === 'object' && parsed !== null ? parsed : {};
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliError(`cannot read ${configFile()}: ${(error as Error).message}; run attest login again`);
  }
}

/** Stores the settings readable by the user alone (0600 in a 0700 folder), replacing the file whole. */
export function storeSettings(settings: RemoteSettings): string {
  const dir = configDir();
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = configFile();
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(temporary, 0o600);
  fs.renameSync(temporary, file);
  return file;
}

export interface RemoteOptions {
  url?: string;
  key?: string;
  email?: string;
}

/** `--url`, `--key`, `--email` on every remote command (they win over the environment and the stored login). */
export function remoteOptions(command: Command): Command {
  return command
    .option('--url <url>', 'the instance, e.g. https://attest.example.com (default: ATTEST_URL, then attest login)')
    .option('--key <key>', 'the API key (default: ATTEST_API_KEY, then attest login)')
    .option('--email <email>', 'the e-mail of an old-format key (default: ATTEST_USER, then attest login)');
}

/** The settings in force: flags, then ATTEST_URL / ATTEST_API_KEY / ATTEST_USER, then what `attest login` stored. */
export function resolveSettings(options: RemoteOptions, env: NodeJS.ProcessEnv = process.env): RemoteSettings {
  const stored = readStoredSettings();
  const url = options.url || env.ATTEST_URL || stored.url;
  const apiKey = options.key || env.ATTEST_API_KEY || stored.apiKey;
  const email = options.email || env.ATTEST_USER || stored.email;
  if (!url) throw new CliError('no instance: pass --url, set ATTEST_URL or run attest login');
  if (!apiKey) throw new CliError('no API key: pass --key, set ATTEST_API_KEY or run attest login');
  if (OLD_FORMAT_KEY.test(apiKey) && !email) {
    throw new CliError("an old-format (UUID) key is only valid with its owner's e-mail: pass --email or set ATTEST_USER");
  }
  try {
    new URL(url);
  } catch {
    throw new CliError(`not a URL: ${url}`);
  }
  return { url, apiKey, ...(email ? { email } : {}) };
}

export function clientFor(settings: RemoteSettings): AttestClient {
  return new AttestClient({ baseUrl: settings.url, apiKey: settings.apiKey, user: settings.email });
}

/** The client of a remote command, from its options. */
export function remoteClient(options: RemoteOptions): AttestClient {
  return clientFor(resolveSettings(options));
}

/** A failed call as the user should read it: the problem's own words, and its code. */
export function explain(error: unknown): never {
  if (error instanceof ApiError) {
    const detail = String(error.problem.detail ?? error.problem.title ?? 'the server refused the call');
    throw new CliError(`${detail} (${error.status} ${error.code})`);
  }
  if (error instanceof ClientConfigError) throw new CliError(error.message);
  if (error instanceof TypeError && /fetch failed/.test(error.message)) {
    const cause = (error as { cause?: { message?: string } }).cause?.message;
    throw new CliError(`cannot reach the instance${cause ? `: ${cause}` : ''}`);
  }
  throw error;
}

export const EXPORTER = `attest-cli ${APP_VERSION}`;
