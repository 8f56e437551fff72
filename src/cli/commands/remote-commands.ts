import os from 'node:os';
import { type Command, InvalidArgumentError } from 'commander';
import { AttestClient, v1 } from '../../client/index.ts';
import { CliError, report, wholeNumber } from '../output.ts';
import { clientFor, explain, type RemoteOptions, remoteClient, remoteOptions, resolveSettings, storeSettings } from '../remote.ts';

/** Runs a remote command's body; a problem answer becomes its message and exit status 1. */
const guarded =
  <A extends unknown[]>(body: (...args: A) => Promise<void>) =>
  async (...args: A) => {
    try {
      await body(...args);
    } catch (error) {
      explain(error);
    }
  };

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** Every item of a paged list, following `nextCursor`. */
async function allPages<T>(page: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor: string | null }>): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const next = await page(cursor);
    items.push(...next.items);
    cursor = next.nextCursor ?? undefined;
  } while (cursor);
  return items;
}

const table = (rows: string[][]) => {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
};

interface LoginOptions extends RemoteOptions {
  passwordStdin?: boolean;
  json?: boolean;
}

function loginCommand(program: Command): void {
  remoteOptions(
    program.command('login').description('check an instance and key, and store them for the other commands (0600, in your config folder)'),
  )
    .option('--password-stdin', 'log in with --email and the password on stdin; a standard API key is created for this machine and stored')
    .option('--json', 'print the result as JSON')
    .action(
      guarded(async (options: LoginOptions) => {
        let settings: { url: string; apiKey: string; email?: string };
        if (options.passwordStdin) {
          const url = options.url ?? process.env.ATTEST_URL;
          if (!url || !options.email) throw new CliError('--password-stdin needs --url and --email');
          const password = await readStdin();
          const anonymous = new AttestClient({ baseUrl: url });
          const session = await anonymous.call(v1.meta.login, { body: { email: options.email, password } });
          const withSession = new AttestClient({ baseUrl: url, apiKey: session.key });
          const created = await withSession.call(v1.users.createApiKey, {
            params: { email: options.email },
            // A key minted through a session confirms the password again (SEC-2f): the one just read.
            body: { name: `attest CLI on ${os.hostname()}`.slice(0, 200), password },
          });
          settings = { url, apiKey: created.key };
        } else {
          settings = resolveSettings(options);
        }
        const me = await clientFor(settings).call(v1.meta.getMe);
        const file = storeSettings({ ...settings, email: settings.email ?? me.email });
        report(
          options.json,
          { url: settings.url, email: me.email, role: me.role, keyId: me.key.id, config: file },
          `logged in to ${settings.url} as ${me.email} (${me.role}); saved in ${file}`,
        );
      }),
    );
}

interface KeyOptions extends RemoteOptions {
  user?: string;
  json?: boolean;
}

/** Whose keys: `--user`, else the caller's own. */
async function keyOwner(client: AttestClient, options: KeyOptions): Promise<string> {
  return options.user ?? (await client.call(v1.meta.getMe)).email;
}

function keysCommand(program: Command): void {
  const keys = program.command('keys').description("API keys: list, create and revoke (yours, or with --user another user's, as an admin)");
  keysListCommand(keys);
  keysCreateCommand(keys);
  keysRevokeCommand(keys);
}

function keysListCommand(keys: Command): void {
  remoteOptions(keys.command('list').description('list API keys (never their secrets)'))
    .option('--user <email>', 'whose keys (default: yours)')
    .option('--all', 'include revoked keys')
    .option('--json', 'print JSON')
    .action(
      guarded(async (options: KeyOptions & { all?: boolean }) => {
        const client = remoteClient(options);
        const email = await keyOwner(client, options);
        const items = await allPages((cursor) =>
          client.call(v1.users.listApiKeys, {
            params: { email },
            query: { ...(options.all ? { includeRevoked: true } : {}), ...(cursor ? { cursor } : {}) },
          }),
        );
        const rows = [['ID', 'NAME', 'FORMAT', 'SCOPE', 'HINT', 'CREATED', 'LAST USED', 'REVOKED']];
        for (const k of items) rows.push([k.id, k.name, k.format, k.scope, k.hint, k.createdAt, k.lastUsedAt ?? '-', k.revokedAt ?? '-']);
        report(options.json, items, table(rows));
      }),
    );
}

function keysCreateCommand(keys: Command): void {
  remoteOptions(keys.command('create').description('create an API key; the secret is printed this once'))
    .requiredOption('--name <name>', 'what the key is for, e.g. "CI on main"')
    .option('--user <email>', 'for whom (default: you)')
    .option('--read-only', 'a read-only key (caps the key at viewer)')
    .option('--expires <date>', 'when it stops working', (value) => {
      if (Number.isNaN(Date.parse(value))) throw new InvalidArgumentError('expected a date, for example 2027-01-01');
      return new Date(value).toISOString();
    })
    .option('--json', 'print JSON')
    .action(
      guarded(async (options: KeyOptions & { name: string; readOnly?: boolean; expires?: string }) => {
        const client = remoteClient(options);
        const email = await keyOwner(client, options);
        const created = await client.call(v1.users.createApiKey, {
          params: { email },
          body: {
            name: options.name,
            ...(options.readOnly ? { scope: 'read' as const } : {}),
            ...(options.expires ? { expiresAt: options.expires } : {}),
          },
        });
        report(options.json, created, `${created.key}\n(key ${created.id} for ${email}; the secret is shown this once)`);
      }),
    );
}

function keysRevokeCommand(keys: Command): void {
  remoteOptions(
    keys
      .command('revoke')
      .description('revoke an API key; it stops working on the next request')
      .argument('<keyId>', 'the key id (see keys list)'),
  )
    .option('--user <email>', 'whose key (default: yours)')
    .option('--json', 'print JSON')
    .action(
      guarded(async (keyId: string, options: KeyOptions) => {
        const client = remoteClient(options);
        const email = await keyOwner(client, options);
        await client.call(v1.users.revokeApiKey, { params: { email, keyId } });
        report(options.json, { revoked: keyId, user: email }, `revoked key ${keyId} of ${email}`);
      }),
    );
}

interface RunsOptions extends RemoteOptions {
  project: string;
  status?: 'queued' | 'running' | 'completed' | 'aborted';
  verdict?: 'passed' | 'failed' | 'broken' | 'skipped';
  limit: number;
  json?: boolean;
}

function runsCommand(program: Command): void {
  const runs = program.command('runs').description('test runs: list and show');
  remoteOptions(runs.command('list').description("a project's runs, newest first"))
    .requiredOption('--project <key>', 'the project (id or key)')
    .option('--status <status>', 'queued, running, completed or aborted')
    .option('--verdict <verdict>', 'passed, failed, broken or skipped')
    .option('--limit <n>', 'at most this many', wholeNumber(1), 50)
    .option('--json', 'print JSON')
    .action(
      guarded(async (options: RunsOptions) => {
        const client = remoteClient(options);
        const project = await client.call(v1.projects.getProject, { params: { projectId: options.project } });
        const page = await client.call(v1.runs.listRuns, {
          query: {
            projectId: project.id,
            limit: options.limit,
            ...(options.status ? { status: options.status } : {}),
            ...(options.verdict ? { verdict: options.verdict } : {}),
          },
        });
        const rows = [['ID', 'STATUS', 'VERDICT', 'CREATED', 'NAME']];
        for (const r of page.items) rows.push([r.id, r.status, r.verdict ?? '-', r.createdAt, r.name]);
        report(options.json, page.items, table(rows));
      }),
    );
  remoteOptions(runs.command('show').description('a run, with a summary of its results').argument('<testRunId>', 'the run'))
    .option('--json', 'print JSON')
    .action(
      guarded(async (testRunId: string, options: RemoteOptions & { json?: boolean }) => {
        const client = remoteClient(options);
        const run = await client.call(v1.runs.getRun, { params: { testRunId } });
        const results = await client.call(v1.results.getResults, { params: { testRunId }, query: { partial: true } });
        const counts: Record<string, number> = {};
        for (const step of results.steps) counts[step.status] = (counts[step.status] ?? 0) + 1;
        const lines = [
          `${run.name}`,
          `  id ${run.id} · project ${run.projectId}`,
          `  ${run.status}${run.verdict ? ` · ${run.verdict}` : ''} · created ${run.createdAt}${run.finishedAt ? ` · finished ${run.finishedAt}` : ''}`,
          `  ${results.steps.length} steps: ${
            Object.entries(counts)
              .map(([status, n]) => `${n} ${status}`)
              .join(', ') || 'none'
          } · ${results.cells.length} run cells`,
          ...results.steps
            .filter((s) => s.status === 'failed' || s.status === 'broken')
            .map((s) => `  ✘ ${s.title}${s.error ? `: ${s.error.split('\n')[0]}` : ''}`),
        ];
        report(options.json, { run, steps: results.steps.length, statuses: counts }, lines.join('\n'));
      }),
    );
}

function projectsCommand(program: Command): void {
  const projects = program.command('projects').description('projects');
  remoteOptions(projects.command('list').description('the projects you can see'))
    .option('--json', 'print JSON')
    .action(
      guarded(async (options: RemoteOptions & { json?: boolean }) => {
        const client = remoteClient(options);
        const items = await allPages((cursor) => client.call(v1.projects.listProjects, { query: cursor ? { cursor } : {} }));
        const rows = [['KEY', 'ID', 'NAME']];
        for (const p of items) rows.push([p.key, p.id, p.name]);
        report(options.json, items, table(rows));
      }),
    );
}

interface RunnerOptions extends RemoteOptions {
  runner: string;
  lease?: number;
  json?: boolean;
}

/** An option that may be given more than once, each time one value or a comma-separated list. */
const collect = (value: string, previous: string[]) => [...previous, ...value.split(',').filter((item) => item !== '')];

/** The options every runner command takes: its name, and the length of the lease it asks for. */
const runnerOptions = (command: Command) =>
  remoteOptions(command)
    .option(
      '--runner <name>',
      'the name this runner goes by; the lease belongs to it (default: the host name)',
      os.hostname().slice(0, 128),
    )
    .option('--lease <seconds>', 'how long the lease lasts from now (server default 300)', wholeNumber(1))
    .option('--json', 'print JSON');

/**
 * `attest runner claim` and `attest runner heartbeat`: a runner takes queued runs under a lease
 * and keeps it (SCALE-6), for runners written as shell scripts.
 */
function runnerCommand(program: Command): void {
  const runner = program.command('runner').description('for runners: take the next queued run under a lease, and keep the lease');
  runnerOptions(
    runner
      .command('claim')
      .description('take the oldest queued run this runner can serve; prints nothing to claim (null with --json) when none'),
  )
    .option('--device <id>', 'a device this runner serves (repeat, or separate with commas)', collect, [])
    .option(
      '--label <label>',
      'serve any device carrying this label, and every other --label (repeat, or separate with commas)',
      collect,
      [],
    )
    .option('--project <key>', "only this project's runs (id or key)")
    .action(
      guarded(async (options: RunnerOptions & { device: string[]; label: string[]; project?: string }) => {
        const client = remoteClient(options);
        const projectId = options.project
          ? (await client.call(v1.projects.getProject, { params: { projectId: options.project } })).id
          : undefined;
        const run = await client.claimRun({
          runner: options.runner,
          ...(options.device.length > 0 ? { deviceIds: options.device } : {}),
          ...(options.label.length > 0 ? { deviceLabels: options.label } : {}),
          ...(projectId ? { projectId } : {}),
          ...(options.lease ? { leaseSeconds: options.lease } : {}),
        });
        if (!run) {
          report(options.json, null, 'nothing to claim: no queued run matches');
          return;
        }
        const lines = [
          `claimed ${run.id}: ${run.name}`,
          `  project ${run.projectId} · device ${run.deviceId ?? '-'} · job ${run.jobId ?? '-'}`,
          `  leased to ${run.runner} until ${run.leaseExpiresAt}: attest runner heartbeat ${run.id} --runner ${JSON.stringify(run.runner)} keeps it`,
        ];
        report(options.json, run, lines.join('\n'));
      }),
    );
  runnerOptions(
    runner.command('heartbeat').description("extend this runner's lease on a run it claimed").argument('<testRunId>', 'the run'),
  ).action(
    guarded(async (testRunId: string, options: RunnerOptions) => {
      const client = remoteClient(options);
      const run = await client.heartbeatRun(testRunId, {
        runner: options.runner,
        ...(options.lease ? { leaseSeconds: options.lease } : {}),
      });
      report(options.json, run, `lease of ${run.runner} on ${run.id} extended until ${run.leaseExpiresAt}`);
    }),
  );
}

/**
 * `attest password`: sets the password the web interface signs in with (yours, or with --user
 * another user's, as an admin), read from stdin so it never sits in a shell history.
 */
function passwordCommand(program: Command): void {
  remoteOptions(
    program
      .command('password')
      .description('set the password you (or, as an admin, --user) sign in to the web interface with; read from stdin')
      .option('--user <e-mail>', "another user's password (admins)"),
  ).action(async (options: RemoteOptions & { user?: string }) => {
    const client = remoteClient(options);
    try {
      const email = options.user ?? (await client.call(v1.meta.getMe)).email;
      const password = await readStdin();
      if (password === '') throw new CliError('no password on stdin: echo "…" | attest password, or type it and end with Ctrl-D');
      await client.call(v1.users.setUserPassword, { params: { email }, body: { password } });
      process.stdout.write(`password set for ${email}: sign in at ${client.url('').replace(/\/api\/v\d+$/, '')}/login\n`);
    } catch (error) {
      explain(error);
    }
  });
}

/** The commands that talk to a running instance over its API, as any client does. */
export function remoteCommands(program: Command): void {
  loginCommand(program);
  passwordCommand(program);
  keysCommand(program);
  runsCommand(program);
  projectsCommand(program);
  runnerCommand(program);
}
