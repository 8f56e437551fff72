import { zipSync } from 'fflate';
import { Api } from '../attest.ts';
import { multipart, send } from '../http-client.ts';
import { type ImportSetPlan, optionsOf, type PlannedImport, reportOf, screenshotPath } from './generate.ts';

// Fills a project through the real endpoint, POST /projects/{id}/imports, one import at a time as
// a CI pipeline sends them: multipart, an `options` part (JSON) and a `file` part, the JUnit XML
// itself or, when it names screenshots, a ZIP of the report and those PNGs. Each import is polled
// until `completed`, so the next one starts on a finished job.

export interface Target {
  url: string;
  key: string;
}

export interface Imported {
  jobId: string;
  runs: number;
  seconds: number;
  attachments: number;
}

/** Posts one file with its options, then polls the import until it completed; seconds from the upload to `completed`. */
export async function importFile(
  target: Target,
  projectId: string,
  file: { name: string; type: string; bytes: Uint8Array },
  options: Record<string, string>,
): Promise<Imported> {
  const form = multipart({ options: JSON.stringify(options) }, { field: 'file', ...file });
  const started = performance.now();
  const answer = await send(
    `${target.url}/api/v1/projects/${projectId}/imports`,
    'POST',
    { 'service.api-token': target.key, accept: 'application/json', 'content-type': form.type },
    form.body,
  );
  const accepted = JSON.parse(answer.body.toString('utf8')) as { id: string };
  if (answer.status !== 202) throw new Error(`import: ${answer.status} ${answer.body.toString('utf8').slice(0, 300)}`);
  const api = new Api(target.url, target.key);
  for (;;) {
    const record = await api.call<{
      status: string;
      error: string | null;
      jobId: string | null;
      counts: { runs: number; attachments: number } | null;
    }>('GET', `/projects/${projectId}/imports/${accepted.id}`);
    if (record.status === 'completed')
      return {
        seconds: (performance.now() - started) / 1000,
        jobId: record.jobId as string,
        runs: record.counts?.runs ?? 0,
        attachments: record.counts?.attachments ?? 0,
      };
    if (record.status === 'failed') throw new Error(`import failed: ${record.error}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The file one planned import is sent as: its XML alone, or zipped with the screenshots it names. */
export function fileOf(plan: ImportSetPlan, planned: PlannedImport, pngs: Buffer[]): { name: string; type: string; bytes: Uint8Array } {
  const { xml, screenshots } = reportOf(plan, planned);
  if (screenshots.length === 0) return { name: `TEST-${planned.index + 1}.xml`, type: 'application/xml', bytes: xml };
  const entries: Record<string, Uint8Array> = { 'report.xml': xml };
  for (const n of screenshots) entries[screenshotPath(n)] = pngs[n] as Buffer;
  // PNGs are compressed already: stored, as a CI's zip step mostly leaves them.
  const bytes = zipSync(
    Object.fromEntries(Object.entries(entries).map(([name, data]) => [name, [data, { level: name.endsWith('.png') ? 0 : 6 }]])),
  );
  return { name: `results-${planned.index + 1}.zip`, type: 'application/zip', bytes };
}

export interface Filled {
  /** Each import's job, in the plan's order. */
  jobs: { planned: PlannedImport; jobId: string }[];
  runs: number;
  attachments: number;
  /** Upload to `completed`, summed over the imports (the time the server spent on them, one at a time). */
  seconds: number;
}

/** Sends every import of `plan` to the project, oldest first. */
export async function fillProject(
  target: Target,
  projectId: string,
  plan: ImportSetPlan,
  pngs: Buffer[],
  progress: (runs: number) => void = () => {},
): Promise<Filled> {
  const filled: Filled = { jobs: [], runs: 0, attachments: 0, seconds: 0 };
  for (const planned of plan.imports) {
    const done = await importFile(target, projectId, fileOf(plan, planned, pngs), optionsOf(plan, planned));
    if (done.runs !== planned.runs) throw new Error(`import ${planned.index}: ${done.runs} runs recorded, ${planned.runs} sent`);
    filled.jobs.push({ planned, jobId: done.jobId });
    filled.runs += done.runs;
    filled.attachments += done.attachments;
    filled.seconds += done.seconds;
    progress(filled.runs);
  }
  return filled;
}
