import { useEffect, useRef, useState } from 'preact/hooks';
import type { Static } from 'typebox';
import { ImportOptions } from '../../../src/api/v1/imports.ts';
import { v1 } from '../../../src/client/index.ts';
import '../admin/admin.css';
import { Badge, Page } from '../components.tsx';
import { useApi } from '../data.ts';
import { formatBytes, formatTime } from '../format.ts';
import { FormProblem, problemAt, TextField } from '../forms.tsx';
import { type Column, ListTable } from '../list-table.tsx';
import { api } from '../session.ts';
import { postWithProgress } from '../upload.ts';
import '../manage.css';

type ImportRecord = Static<typeof v1.imports.ImportRecord>;

/** How often an import in progress is asked about. */
const POLL_MS = 1000;
const OPTION_FIELDS = [
  { name: 'name', label: 'Job name (optional)' },
  { name: 'branch', label: 'Branch' },
  { name: 'build', label: 'Build' },
  { name: 'environment', label: 'Environment' },
  { name: 'ciUrl', label: 'CI build link' },
] as const;

/** What the server is told the file is: a ZIP by its first bytes, JSON by its name, else JUnit XML (as the CLI does). */
async function contentTypeOf(file: File): Promise<string> {
  const head = new Uint8Array(await file.slice(0, 2).arrayBuffer());
  if (head[0] === 0x50 && head[1] === 0x4b) return 'application/zip';
  return /\.json$/i.test(file.name) ? 'application/json' : 'application/xml';
}

const finished = (record: ImportRecord) => record.status === 'completed' || record.status === 'failed';

/** The POST of a report, with its options as the query, its progress reported as it goes. */
async function sendReport(projectKey: string, file: File, query: URLSearchParams, onProgress: (sent: number, total: number) => void) {
  const type = await contentTypeOf(file);
  const answer = await postWithProgress<ImportRecord>(
    `/projects/${encodeURIComponent(projectKey)}/imports?${query}`,
    file,
    onProgress,
    // The name travels in Content-Disposition, so the import lists the file by its own name.
    { 'content-type': type, 'content-disposition': `attachment; filename="${encodeURIComponent(file.name)}"` },
  );
  return answer.body;
}

/** The import's own progress, asked for until it completes or fails. */
function usePolledImport(record: ImportRecord | undefined, setRecord: (r: ImportRecord) => void, setError: (e: Error) => void) {
  useEffect(() => {
    if (!record || finished(record)) return;
    const timer = setTimeout(() => {
      api()
        // An import is addressed under its project's id, not its key.
        .call(v1.imports.getImport, { params: { projectId: record.projectId, importId: record.id } })
        .then(setRecord, setError);
    }, POLL_MS);
    return () => clearTimeout(timer);
  }, [record]);
}

/** A report chosen, sent with its options, and followed until its import completes or fails. */
function useImport(projectKey: string) {
  const [file, setFile] = useState<File | undefined>();
  const [options, setOptions] = useState<Record<string, string>>({});
  const [sent, setSent] = useState<{ sent: number; total: number } | undefined>();
  const [error, setError] = useState<Error | undefined>();
  const [record, setRecord] = useState<ImportRecord | undefined>();
  /** One key per chosen file: sending it again after a lost answer is the same import. */
  const idempotencyKey = useRef('');
  usePolledImport(record, setRecord, setError);
  const choose = (chosen: File | undefined) => {
    if (!chosen) return;
    setFile(chosen);
    setRecord(undefined);
    setError(undefined);
    setSent(undefined);
    idempotencyKey.current = `web-import-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  };
  const submit = async (event: Event) => {
    event.preventDefault();
    if (!file) return;
    setError(undefined);
    setRecord(undefined);
    const query = new URLSearchParams({ idempotencyKey: idempotencyKey.current });
    for (const [name, value] of Object.entries(options)) if (value.trim()) query.set(name, value.trim());
    try {
      setSent({ sent: 0, total: file.size });
      setRecord(await sendReport(projectKey, file, query, (done, total) => setSent({ sent: done, total })));
    } catch (failure) {
      setError(failure as Error);
    } finally {
      setSent(undefined);
    }
  };
  return { file, options, setOptions, sent, error, record, choose, submit };
}

/** Where a report is dropped or chosen, and the one chosen. */
function DropZone({ file, choose }: { file: File | undefined; choose: (file: File | undefined) => void }) {
  const [dragging, setDragging] = useState(false);
  return (
    <section
      class={`drop-zone${dragging ? ' dragging' : ''}`}
      aria-label="Report file"
      data-testid="drop-zone"
      onDragOver={(event) => {
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={(event) => {
        event.preventDefault();
        setDragging(false);
        choose(event.dataTransfer?.files[0]);
      }}
    >
      <p>Drop a JUnit XML file, a Playwright JSON report or a ZIP of reports and attachments here, or</p>
      <label class="button secondary">
        Choose a report
        <input
          class="visually-hidden"
          type="file"
          accept=".xml,.json,.zip,application/xml,text/xml,application/json,application/zip"
          onChange={(event) => choose((event.target as HTMLInputElement).files?.[0])}
        />
      </label>
      {file ? (
        <p data-testid="chosen-file">
          <strong>{file.name}</strong> <span class="muted">({formatBytes(file.size)})</span>
        </p>
      ) : null}
    </section>
  );
}

/** The import form: the report, its options, the button and the upload's progress. */
function ImportForm({ state }: { state: ReturnType<typeof useImport> }) {
  const { file, options, setOptions, sent, error } = state;
  return (
    // The API checks the options (a CI link is http(s)); its problems show beside their fields.
    <form class="panel import-form" onSubmit={state.submit} aria-label="Import a report" noValidate>
      <DropZone file={file} choose={state.choose} />
      <div class="inline-form">
        {OPTION_FIELDS.map((field) => (
          <TextField
            key={field.name}
            label={field.label}
            name={field.name}
            value={options[field.name] ?? ''}
            onInput={(value) => setOptions((o) => ({ ...o, [field.name]: value }))}
            schema={ImportOptions.properties[field.name]}
            problem={problemAt(error, `/query/${field.name}`)}
          />
        ))}
      </div>
      <button type="submit" disabled={!file || sent !== undefined}>
        Import results
      </button>
      {sent ? (
        <p>
          <progress max={sent.total || 1} value={sent.sent} aria-label="Uploading the report" /> {formatBytes(sent.sent)} of{' '}
          {formatBytes(sent.total)}
        </p>
      ) : null}
      <FormProblem error={error} fields={OPTION_FIELDS.map((field) => `/query/${field.name}`)} />
    </form>
  );
}

/** `/projects/{projectKey}/import`: a JUnit XML, Playwright JSON or ZIP report brought in by drag and drop (UI-11). */
export function ImportPage({ projectKey }: { projectKey: string }) {
  const project = useApi((client) => client.call(v1.projects.getProject, { params: { projectId: projectKey } }), [projectKey]);
  const state = useImport(projectKey);
  const { record } = state;
  const earlier = useApi(
    (client) => client.call(v1.imports.listImports, { params: { projectId: projectKey }, query: { limit: 10 } }),
    [projectKey, record?.status],
  );
  const title = `Import results${project.data ? ` into ${project.data.name}` : ''}`;
  return (
    <Page title={title} actions={<a href={`/projects/${projectKey}`}>Project</a>}>
      <ImportForm state={state} />
      {record ? <ImportProgress record={record} /> : null}
      <section class="panel" aria-labelledby="earlier-heading">
        <h2 id="earlier-heading">Latest imports</h2>
        <ListTable
          label="Latest imports"
          rows={earlier.data?.items}
          error={earlier.error}
          empty="No import yet."
          columns={IMPORT_COLUMNS}
          rowKey={(row) => row.id}
        />
      </section>
    </Page>
  );
}

const IMPORT_COLUMNS: Column<ImportRecord>[] = [
  { header: 'File', cell: (row) => row.fileName },
  { header: 'Status', cell: (row) => <Badge value={row.status} /> },
  { header: 'Runs', cell: (row) => row.counts?.runs ?? row.progress.done },
  { header: 'Job', cell: (row) => (row.jobId ? <a href={`/jobs/${row.jobId}`}>Open job</a> : '—') },
  { header: 'Imported', cell: (row) => formatTime(row.createdAt) },
];

/** The import's own progress (runs written of runs read), its counts, and what could not be taken from each file. */
function ImportProgress({ record }: { record: ImportRecord }) {
  const { done, total } = record.progress;
  const withErrors = record.files.filter((f) => f.errors.length > 0);
  return (
    <section class="panel" aria-labelledby="import-heading" data-testid="import-progress">
      <h2 id="import-heading">
        Import of {record.fileName} <Badge value={record.status} />
      </h2>
      <p role="status">
        {finished(record) ? (
          record.status === 'completed' ? (
            `Imported ${record.counts?.runs ?? done} runs of ${record.counts?.tests ?? '?'} tests.`
          ) : (
            `The import failed: ${record.error ?? 'no reason given'}.`
          )
        ) : (
          <>
            Writing runs: {done} of {total ?? '…'}{' '}
            <progress max={total ?? 1} value={total === null ? undefined : done} aria-label="Runs written" />
          </>
        )}
      </p>
      {record.counts ? (
        <p class="muted">
          {record.counts.passed} passed, {record.counts.failed} failed, {record.counts.broken} broken, {record.counts.skipped} skipped
          {record.counts.attachments > 0 ? `, ${record.counts.attachments} attachments` : ''}
          {record.counts.attachmentsMissing > 0 ? ` (${record.counts.attachmentsMissing} missing)` : ''}.
        </p>
      ) : null}
      {record.jobId ? (
        <p>
          <a href={`/jobs/${record.jobId}`}>Open the imported job</a>
        </p>
      ) : null}
      {withErrors.length > 0 ? (
        <div>
          <h3>Problems by file</h3>
          <ul class="import-errors">
            {withErrors.map((f) => (
              <li key={f.file}>
                <strong>{f.file}</strong> ({f.format}, {f.runs} runs)
                <ul>
                  {f.errors.map((line) => (
                    <li key={line}>{line}</li>
                  ))}
                </ul>
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </section>
  );
}
