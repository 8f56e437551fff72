import path from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { type AttestClient, v1 } from '../../client/index.ts';
import { FORMATS, type Format } from '../../export/index.ts';
import { type ExportProgress, type ExportSummary, exportJob, exportRun, type JobExportSummary } from '../export/download.ts';
import { CliError, wholeNumber } from '../output.ts';
import { progressBar } from '../progress.ts';
import { EXPORTER, explain, type RemoteOptions, remoteClient, remoteOptions } from '../remote.ts';

interface ExportOptions extends RemoteOptions {
  out: string;
  format: Format[];
  job?: string;
  project?: string;
  since?: string;
  concurrency: number;
  json?: boolean;
  xrayProject?: string;
  partial?: boolean;
}

function formatList(value: string, previous: Format[] = []): Format[] {
  const formats = value.split(',').map((name) => name.trim().toLowerCase());
  for (const format of formats) {
    if (!(FORMATS as readonly string[]).includes(format)) throw new InvalidArgumentError(`expected one of ${FORMATS.join(', ')}`);
  }
  return [...new Set([...previous, ...(formats as Format[])])];
}

function sinceDate(value: string): string {
  const time = Date.parse(value);
  if (Number.isNaN(time)) throw new InvalidArgumentError('expected a date, for example 2026-11-01 or 2026-11-01T08:00:00Z');
  return new Date(time).toISOString();
}

/** Every completed run a page-by-page listing returns. */
async function completedRuns(client: AttestClient, query: { projectId: string; jobId?: string; from?: string }): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.call(v1.runs.listRuns, {
      query: { ...query, status: 'completed', ...(cursor ? { cursor } : {}) },
    });
    ids.push(...page.items.map((run) => run.id));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return ids.reverse();
}

/** Checks that the options name one thing to export. */
function checkSelection(runId: string | undefined, options: ExportOptions): void {
  const ways = [runId !== undefined, options.job !== undefined, options.project !== undefined].filter(Boolean).length;
  if (ways !== 1) throw new CliError('name exactly one of: a run id, --job <jobId>, or --project <key> (with --since <date>)');
  if (options.since && !options.project) throw new CliError('--since goes with --project');
  if (options.partial && !runId) throw new CliError('--partial goes with a run id');
}

/** The runs the options name: one run, or a project's completed runs since a date. */
async function selectRuns(client: AttestClient, runId: string | undefined, options: ExportOptions): Promise<string[]> {
  if (runId) return [runId];
  const project = await client.call(v1.projects.getProject, { params: { projectId: options.project as string } });
  return completedRuns(client, { projectId: project.id, ...(options.since ? { from: options.since } : {}) });
}

/** How progress shows: a bar on a terminal, JSON lines for --json, else a plain line every tenth. */
function progressDisplay(json: boolean | undefined) {
  if (json) {
    return {
      start() {},
      progress(p: ExportProgress) {
        process.stderr.write(
          `${JSON.stringify({ event: 'image', runId: p.runId, done: p.done, total: p.total, path: p.image.path, reused: p.reused })}\n`,
        );
      },
      stop() {},
    };
  }
  if (process.stderr.isTTY) {
    let bar = progressBar('images');
    return {
      start(runId: string, total: number) {
        bar = progressBar(`run ${runId.slice(0, 8)}`);
        bar.update(0, total);
      },
      progress: (p: ExportProgress) => bar.update(p.done, p.total),
      stop: () => bar.stop(),
    };
  }
  return {
    start(runId: string, total: number) {
      process.stderr.write(`run ${runId}: ${total} images\n`);
    },
    progress(p: ExportProgress) {
      const step = Math.max(1, Math.ceil(p.total / 10));
      if (p.done % step === 0 || p.done === p.total) process.stderr.write(`run ${p.runId}: ${p.done}/${p.total} images\n`);
    },
    stop() {},
  };
}

const runOptions = (options: ExportOptions) => ({
  formats: options.format,
  concurrency: options.concurrency,
  exporter: EXPORTER,
  xrayProject: options.xrayProject,
  partial: options.partial,
});

export function exportCommand(program: Command): void {
  remoteOptions(
    program
      .command('export')
      .description('export completed runs with every screenshot: results, manifest, images, and the formats other tools import')
      .argument('[testRunId]', 'the run to export')
      .requiredOption('-o, --out <dir>', 'the folder to write (one sub-folder per run when several are exported)')
      .option('-f, --format <formats>', `what to write besides the bundle, comma-separated: ${FORMATS.join(', ')}`, formatList, ['bundle'])
      .option('--job <jobId>', "export a job: each completed run's bundle in its folder, and one report per format for the whole job")
      .option('--project <key>', 'export the completed runs of this project (id or key)')
      .option('--since <date>', 'with --project: only runs created at or after this date', sinceDate)
      .option('-c, --concurrency <n>', 'images downloaded at once', wholeNumber(1), 8)
      .option('--xray-project <key>', 'the Jira project key to put in xray.json')
      .option('--partial', 'with a run id: export a run that is not completed, as far as it got')
      .option('--json', 'print a JSON summary on stdout, and progress as JSON lines on stderr'),
  ).action(exportAction);
}

/** Exports what the arguments select: one run, a project's runs, or a job with its reports. */
async function exportAction(runId: string | undefined, options: ExportOptions): Promise<void> {
  const client = remoteClient(options);
  const display = progressDisplay(options.json);
  const summaries: ExportSummary[] = [];
  let job: JobExportSummary | undefined;
  try {
    checkSelection(runId, options);
    if (options.job) {
      job = await exportJob(client, options.job, path.resolve(options.out), {
        ...runOptions(options),
        onRuns: (_job, runs) => {
          if (runs === 0) throw new CliError('no completed run matches');
        },
        onStart: (started, total) => display.start(started, total),
        onProgress: (progress) => display.progress(progress),
      });
      display.stop();
      summaries.push(...job.runs);
    }
    const runs = job ? [] : await selectRuns(client, runId, options);
    if (!job && runs.length === 0) throw new CliError('no completed run matches');
    for (const id of runs) {
      const dir = runId ? path.resolve(options.out) : path.resolve(options.out, id);
      summaries.push(
        await exportRun(client, id, dir, {
          ...runOptions(options),
          onStart: (started, total) => display.start(started, total),
          onProgress: (progress) => display.progress(progress),
        }),
      );
      display.stop();
    }
  } catch (error) {
    display.stop();
    explain(error);
  }
  printExports(summaries, job, options);
}

/** What was written: JSON with --json, else a line per run and one for the job. */
function printExports(summaries: readonly ExportSummary[], job: JobExportSummary | undefined, options: ExportOptions): void {
  if (options.json) {
    const runs = summaries.map(({ files: _files, ...rest }) => rest);
    const jobSummary = job ? { job: { id: job.jobId, name: job.name, dir: job.dir, files: job.files } } : {};
    process.stdout.write(`${JSON.stringify({ runs, ...jobSummary })}\n`);
    return;
  }
  for (const s of summaries) {
    process.stdout.write(
      `${s.name} (${s.verdict ?? 'no verdict'}): ${s.images} images (${s.downloaded} downloaded, ${s.reused} already there) in ${s.dir}\n`,
    );
  }
  if (job) process.stdout.write(`job ${job.name}: ${job.runs.length} runs; ${job.files.join(', ')} in ${job.dir}\n`);
}
