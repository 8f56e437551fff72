import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { type AttestClient, v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { Breadcrumb } from '../breadcrumb.tsx';
import { Badge, ErrorBox, Page, PageWaiting, Preformatted } from '../components.tsx';
import { describeError, useApi } from '../data.ts';
import {
  IDLE_NOTE_CELL,
  MARKS,
  type Mark,
  markBody,
  recording,
  resumeIndex,
  type StepState,
  startBody,
  statusWord,
  stepStates,
  suggestedVerdict,
  type TestDefinition,
} from '../execute/execution.ts';
import { type Upload, UploadList, useStepUploads } from '../execute/uploads.tsx';
import { ApiImage } from '../images.tsx';
import { loadArtifacts } from '../run/artifacts.tsx';
import type { ArtifactDetails, RunResults, TestRun } from '../run/steps.ts';
import '../run/run.css';
import '../execute/execute.css';

interface ExecutionData {
  run: TestRun;
  test: TestDefinition | undefined;
  results: RunResults;
  artifacts: ArtifactDetails[];
}

/** The steps the run executes: its version of the test (`testVersion`), or the test as it is for a run that records none. */
async function executedTest(client: AttestClient, run: TestRun): Promise<TestDefinition | undefined> {
  const { testId, testVersion } = run;
  if (!testId) return undefined;
  const content = testVersion
    ? await client.call(v1.tests.getTestVersion, { params: { testId, version: testVersion } })
    : await client.call(v1.tests.getTest, { params: { testId } });
  return { id: testId, name: content.name, version: testVersion, steps: content.steps };
}

async function loadExecution(client: AttestClient, testRunId: string): Promise<ExecutionData> {
  const run = await client.call(v1.runs.getRun, { params: { testRunId } });
  const [test, results, artifacts] = await Promise.all([
    executedTest(client, run),
    client.call(v1.results.getResults, { params: { testRunId }, query: run.status === 'completed' ? {} : { partial: true } }),
    loadArtifacts(client, run.projectId, testRunId),
  ]);
  return { run, test, results, artifacts };
}

/**
 * Read again every minute while the run is open: a run left idle for the launch idle time is ended
 * by the server (TCM-9), and a tab left open says so when its tester comes back.
 */
const WHILE_OPEN = {
  refreshMs: 60_000,
  refreshWhile: (data: ExecutionData) => data.run.status === 'running' || data.run.status === 'queued',
};

/** `/runs/{testRunId}/execute`: a run of a test executed by hand, step by step (UI-10). */
export function ExecutePage({ testRunId }: { testRunId: string }) {
  const loaded = useApi((client) => loadExecution(client, testRunId), [testRunId], WHILE_OPEN);
  if (!loaded.data) return <PageWaiting title="Execute run" error={loaded.error} />;
  const { run, test } = loaded.data;
  if (!test) {
    return (
      <Page title={`Execute ${run.name}`}>
        <p class="error" role="alert">
          This run belongs to no test, so there are no steps to execute. <a href={`/runs/${run.id}`}>Open the run</a>.
        </p>
      </Page>
    );
  }
  return <ExecuteView data={{ ...loaded.data, test }} reload={loaded.reload} refreshError={loaded.error} />;
}

const isTyping = (target: EventTarget | null) =>
  target instanceof HTMLElement && (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName));

/** Image files from a paste, a drop or a file picker. */
function imagesOf(list: FileList | null | undefined): File[] {
  return Array.from(list ?? []).filter((file) => file.type.startsWith('image/'));
}

type Post = (body: ReturnType<typeof markBody>) => Promise<unknown>;
type Failure = { message: string; retry: () => void };

/**
 * Marks a step passed, failed, blocked or skipped. A mark shows at once (pending) and is taken back
 * if the API refuses it; a pass or a skip moves on to the next step.
 */
function useMarking(
  run: TestRun,
  states: StepState[],
  drafts: Record<string, string>,
  setCurrent: (i: number) => void,
  reload: () => void,
) {
  const live = recording(run);
  const [pending, setPending] = useState<Record<string, Mark>>({});
  const [failure, setFailure] = useState<Failure | undefined>();
  const action = useAction();
  const post: Post = useCallback(
    (body) =>
      action.run(
        (client) => client.call(v1.results.appendResults, { params: { testRunId: run.id }, body }),
        () => '',
      ),
    [action.run, run.id],
  );
  /** Stores a step as started, once, so what is attached to it has a step to belong to. */
  const ensureStarted = useCallback(
    async (step: StepState): Promise<boolean> => {
      if (step.stored) return true;
      return (await post(startBody(step, new Date().toISOString()))) !== undefined;
    },
    [post],
  );
  const mark = useCallback(
    async (step: StepState, markWith: Mark) => {
      if (!live || step.mark) return;
      const body = markBody(step, markWith, drafts[step.key] ?? '', new Date().toISOString());
      const send = async () => {
        setFailure(undefined);
        setPending((p) => ({ ...p, [step.key]: markWith }));
        // A pass or a skip moves on; a failure stays, for its screenshot and its words.
        if ((markWith === 'passed' || markWith === 'skipped') && step.index < states.length - 1) setCurrent(step.index + 1);
        if ((await post(body)) === undefined) {
          // Rolled back: the step shows no mark, and the same post can be sent again (same idempotency key).
          setPending(({ [step.key]: _, ...rest }) => rest);
          setCurrent(step.index);
          setFailure({ message: `Step ${step.index + 1} was not marked ${statusWord(markWith)}.`, retry: send });
        }
        // Either way the run is read again; after a refusal it may have ended meanwhile (completed elsewhere, or ended idle).
        reload();
      };
      await send();
    },
    [live, drafts, post, reload, states.length],
  );
  // Pending marks give way to what the API stored.
  useEffect(() => {
    setPending((p) => {
      const left = Object.fromEntries(Object.entries(p).filter(([key]) => !states.find((s) => s.key === key)?.mark));
      return Object.keys(left).length === Object.keys(p).length ? p : left;
    });
  }, [states]);
  return { pending, failure, error: action.error, mark, ensureStarted };
}

/** Attaches images to the step in view; Ctrl/⌘+V anywhere on the page pastes one (text pastes as text). */
function useAttach(run: TestRun, state: StepState | undefined, ensureStarted: (step: StepState) => Promise<boolean>, reload: () => void) {
  const live = recording(run);
  const uploads = useStepUploads(run, reload);
  const attach = useCallback(
    async (files: File[]) => {
      if (!live || files.length === 0 || !state) return;
      if (!(await ensureStarted(state))) return;
      for (const file of files) uploads.start(state, file);
    },
    [live, state, ensureStarted, uploads.start],
  );
  useEffect(() => {
    const onPaste = (event: ClipboardEvent) => {
      const files = imagesOf(event.clipboardData?.files);
      if (files.length === 0) return;
      event.preventDefault();
      void attach(files);
    };
    document.addEventListener('paste', onPaste);
    return () => document.removeEventListener('paste', onPaste);
  }, [attach]);
  return { attach, uploads };
}

interface OnScreen {
  state: StepState | undefined;
  live: boolean;
  pending: Record<string, Mark>;
  mark: (step: StepState, mark: Mark) => Promise<void>;
  current: number;
  count: number;
}

/**
 * P, F, B, S mark the step in view and N goes to the next, unless the focus is in a text field.
 * The listener reads what is on screen through a ref written at each render: an effect re-attached
 * after the render would leave a window in which a quick key acts on the step that was shown before.
 */
function useStepKeys(now: OnScreen, setCurrent: (i: number) => void) {
  const onScreen = useRef(now);
  onScreen.current = now;
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      const { state, live, pending, mark, current, count } = onScreen.current;
      if (event.ctrlKey || event.metaKey || event.altKey || isTyping(event.target) || !state) return;
      const key = event.key.toLowerCase();
      const chosen = MARKS.find((m) => m.shortcut === key);
      if (chosen && live && !state.mark && !pending[state.key]) {
        event.preventDefault();
        void mark(state, chosen.mark);
      } else if (key === 'n' && current < count - 1) {
        event.preventDefault();
        setCurrent(current + 1);
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
}

/** A mark the API refused, with a Try again; or the API's last problem. */
function MarkProblem({ failure, error }: { failure: Failure | undefined; error: Error | undefined }) {
  if (!failure) return error ? <ErrorBox error={error} /> : null;
  return (
    <p class="error" role="alert">
      {failure.message} {error ? describeError(error) : null}{' '}
      <button type="button" class="secondary" onClick={failure.retry}>
        Try again
      </button>
    </p>
  );
}

function ExecuteView({
  data,
  reload,
  refreshError,
}: {
  data: ExecutionData & { test: TestDefinition };
  reload: () => void;
  refreshError: Error | undefined;
}) {
  const { run, test, results, artifacts } = data;
  const { route } = useLocation();
  const states = useMemo(() => stepStates(test, results, artifacts), [test, results, artifacts]);
  const [current, setCurrent] = useState(() => resumeIndex(states));
  const [drafts, setDrafts] = useState<Record<string, string>>({});
  const live = recording(run);
  const state = states[Math.min(current, states.length - 1)];
  const { pending, failure, error, mark, ensureStarted } = useMarking(run, states, drafts, setCurrent, reload);
  const { attach, uploads } = useAttach(run, state, ensureStarted, reload);
  useStepKeys({ state, live, pending, mark, current, count: states.length }, setCurrent);
  const marked = states.filter((s) => s.mark || pending[s.key]).length;
  return (
    <Page title={`Execute: ${run.name}`} actions={<a href={`/runs/${run.id}`}>Open run page</a>}>
      <Breadcrumb projectId={run.projectId} jobId={run.jobId} here="Execute" />
      <RunState
        run={run}
        test={test}
        marked={marked}
        total={states.length}
        note={run.status === 'aborted' ? results.cells.find((cell) => cell.name === IDLE_NOTE_CELL) : undefined}
        reload={reload}
      />
      {refreshError ? <ErrorBox error={refreshError} /> : null}
      <MarkProblem failure={failure} error={error} />
      <div class="execute">
        <StepList states={states} pending={pending} current={current} onSelect={setCurrent} />
        {state ? (
          <StepPanel
            key={state.key}
            state={state}
            total={states.length}
            live={live}
            pending={pending[state.key]}
            draft={drafts[state.key] ?? ''}
            onDraft={(text) => setDrafts((d) => ({ ...d, [state.key]: text }))}
            onMark={(m) => mark(state, m)}
            onFiles={attach}
            uploads={uploads.of(state.key)}
            onPrevious={state.index > 0 ? () => setCurrent(state.index - 1) : undefined}
            onNext={state.index < states.length - 1 ? () => setCurrent(state.index + 1) : undefined}
          />
        ) : (
          <p class="muted">This test has no steps: complete the run with its verdict.</p>
        )}
      </div>
      {live ? <CompleteForm run={run} states={states} onDone={() => route(`/runs/${run.id}`)} /> : null}
    </Page>
  );
}

/** The run's state: a queued run is started here (no lease: a person is not a runner); a finished one only looked at. */
function RunState({
  run,
  test,
  marked,
  total,
  note,
  reload,
}: {
  run: TestRun;
  test: TestDefinition;
  marked: number;
  total: number;
  /** Why the server ended the run, when it did (left idle). */
  note: RunResults['cells'][number] | undefined;
  reload: () => void;
}) {
  const action = useAction();
  const start = async () => {
    const started = await action.run(
      (client) => client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'running' } }),
      () => 'Started.',
    );
    if (started) reload();
  };
  return (
    <div class="panel execute-state">
      <p>
        <Badge value={run.verdict ?? run.status} /> Test <a href={`/tests/${test.id}`}>{test.name}</a>
        {test.version ? <span class="muted"> (version {test.version})</span> : null} ·{' '}
        <span role="status">
          {marked} of {total} steps marked
        </span>
      </p>
      {run.status === 'queued' ? (
        <p>
          This run is queued.{' '}
          <button type="button" onClick={start} disabled={action.busy}>
            Start run
          </button>
        </p>
      ) : null}
      {note ? (
        <p class="idle-note" role="status" data-testid="idle-note">
          <strong>This run was ended: nobody recorded anything on it for a while.</strong> {note.text}{' '}
          <a href={`/runs/${run.id}`}>Open the run</a>.
        </p>
      ) : run.status === 'completed' || run.status === 'aborted' ? (
        <p>
          This run is {run.status}
          {run.verdict ? ` (${statusWord(run.verdict)})` : ''}: its results are frozen. <a href={`/runs/${run.id}`}>Open the run</a>.
        </p>
      ) : null}
      {action.error ? <ErrorBox error={action.error} /> : null}
      <p class="muted shortcuts">
        Keys: <kbd>P</kbd> pass, <kbd>F</kbd> fail, <kbd>B</kbd> blocked, <kbd>S</kbd> skip, <kbd>N</kbd> next step. Paste a screenshot with{' '}
        <kbd>Ctrl</kbd>/<kbd>⌘</kbd>+<kbd>V</kbd>.
      </p>
    </div>
  );
}

function StepList({
  states,
  pending,
  current,
  onSelect,
}: {
  states: StepState[];
  pending: Record<string, Mark>;
  current: number;
  onSelect: (index: number) => void;
}) {
  return (
    <nav class="execute-steps" aria-label="Steps">
      <ol>
        {states.map((s) => {
          const status = s.mark ?? pending[s.key];
          return (
            <li key={s.key}>
              <button
                type="button"
                class={`step-link${s.index === current ? ' current' : ''}`}
                aria-current={s.index === current ? 'step' : undefined}
                onClick={() => onSelect(s.index)}
              >
                <span class="step-number">{s.index + 1}.</span> <span class="step-action">{s.defined.action}</span>{' '}
                <span class={`step-mark mark-${status ?? 'none'}`}>{status ? statusWord(status) : 'Not run'}</span>
              </button>
            </li>
          );
        })}
      </ol>
    </nav>
  );
}

/** The step as the test defines it: its action, its data and the result it expects. */
function StepDefinition({ state }: { state: StepState }) {
  const { defined } = state;
  const n = state.index + 1;
  return (
    <dl class="step-definition">
      <dt>Action</dt>
      <dd>
        <Preformatted label={`Action of step ${n}`}>{defined.action}</Preformatted>
      </dd>
      {defined.data ? (
        <>
          <dt>Data</dt>
          <dd>
            <Preformatted label={`Data of step ${n}`}>{defined.data}</Preformatted>
          </dd>
        </>
      ) : null}
      <dt>Expected result</dt>
      <dd>
        {defined.expected ? (
          <Preformatted label={`Expected result of step ${n}`}>{defined.expected}</Preformatted>
        ) : (
          <span class="muted">None given</span>
        )}
      </dd>
    </dl>
  );
}

/** What happened: as stored once the step is marked, a text field before. */
function ActualResult({
  state,
  draft,
  onDraft,
  disabled,
}: {
  state: StepState;
  draft: string;
  onDraft: (t: string) => void;
  disabled: boolean;
}) {
  if (state.mark) {
    return (
      <div class="actual-stored">
        <h3>Actual result</h3>
        {state.actual ? (
          <Preformatted label={`Actual result of step ${state.index + 1}`}>{state.actual}</Preformatted>
        ) : (
          <p class="muted">None written.</p>
        )}
      </div>
    );
  }
  return (
    <label class="actual">
      Actual result
      <textarea rows={3} value={draft} disabled={disabled} onInput={(event) => onDraft((event.target as HTMLTextAreaElement).value)} />
    </label>
  );
}

function MarkButtons({ disabled, onMark }: { disabled: boolean; onMark: (mark: Mark) => void }) {
  return (
    <div class="mark-buttons">
      {MARKS.map((m) => (
        <button
          key={m.mark}
          type="button"
          class={`mark-button mark-${m.mark}`}
          aria-keyshortcuts={m.shortcut.toUpperCase()}
          disabled={disabled}
          onClick={() => onMark(m.mark)}
        >
          {m.label}
        </button>
      ))}
    </div>
  );
}

/** The step's screenshots: those stored, those on their way, and (while the run records) how to add one. */
function StepAttachments({
  state,
  live,
  uploads,
  onFiles,
}: {
  state: StepState;
  live: boolean;
  uploads: Upload[];
  onFiles: (files: File[]) => void;
}) {
  return (
    <div class="attach">
      <h3>Screenshots</h3>
      {live ? (
        <p class="muted drop-hint">
          Paste (<kbd>Ctrl</kbd>/<kbd>⌘</kbd>+<kbd>V</kbd>), drop an image here, or{' '}
          <label class="file-picker">
            choose files
            <input
              type="file"
              accept="image/png,image/jpeg,image/gif,image/webp"
              multiple
              onChange={(event) => {
                const input = event.target as HTMLInputElement;
                onFiles(imagesOf(input.files));
                input.value = '';
              }}
            />
          </label>
          .
        </p>
      ) : null}
      <UploadList uploads={uploads} />
      <Screenshots step={state} />
    </div>
  );
}

/** Images dropped on the panel, while the run records; `dragging` while one is over it. */
function useImageDrop(live: boolean, onFiles: (files: File[]) => void) {
  const [dragging, setDragging] = useState(false);
  const handlers = {
    onDragOver: (event: DragEvent) => {
      if (!live) return;
      event.preventDefault();
      setDragging(true);
    },
    onDragLeave: () => setDragging(false),
    onDrop: (event: DragEvent) => {
      setDragging(false);
      if (!live) return;
      event.preventDefault();
      onFiles(imagesOf(event.dataTransfer?.files));
    },
  };
  return { dragging, handlers };
}

interface StepPanelProps {
  state: StepState;
  total: number;
  live: boolean;
  pending: Mark | undefined;
  draft: string;
  onDraft: (text: string) => void;
  onMark: (mark: Mark) => void;
  onFiles: (files: File[]) => void;
  uploads: Upload[];
  onPrevious: (() => void) | undefined;
  onNext: (() => void) | undefined;
}

function StepPanel(props: StepPanelProps) {
  const { state, total, live, pending, draft, onDraft, onMark, onFiles, uploads, onPrevious, onNext } = props;
  const heading = useRef<HTMLHeadingElement>(null);
  // A new step in view takes the focus, so a screen reader reads where it is and the keys act on it.
  useEffect(() => heading.current?.focus(), []);
  const drop = useImageDrop(live, onFiles);
  const status = state.mark ?? pending;
  return (
    <section
      class={`panel step-panel${drop.dragging ? ' dragging' : ''}`}
      aria-labelledby="step-heading"
      {...drop.handlers}
      data-testid="step-panel"
    >
      <h2 id="step-heading" ref={heading} tabIndex={-1}>
        Step {state.index + 1} of {total}
        {status ? (
          <>
            {' '}
            <span class={`step-mark mark-${status}`}>{statusWord(status)}</span>
          </>
        ) : null}
      </h2>
      <StepDefinition state={state} />
      <ActualResult state={state} draft={draft} onDraft={onDraft} disabled={!live || pending !== undefined} />
      {live && !state.mark ? <MarkButtons disabled={pending !== undefined} onMark={onMark} /> : null}
      <StepAttachments state={state} live={live} uploads={uploads} onFiles={onFiles} />
      <div class="step-nav">
        <button type="button" class="secondary" onClick={onPrevious} disabled={!onPrevious}>
          Previous step
        </button>
        <button type="button" class="secondary" onClick={onNext} disabled={!onNext} aria-keyshortcuts="N">
          Next step
        </button>
      </div>
    </section>
  );
}

function Screenshots({ step }: { step: StepState }) {
  if (step.screenshots.length === 0) return null;
  return (
    <ul class="step-shots" aria-label={`Screenshots of step ${step.index + 1}`}>
      {step.screenshots.map((artifact) => (
        <li key={artifact.id}>
          {artifact.images[0] ? (
            <ApiImage
              imageId={artifact.images[0].id}
              thumbnail
              eager
              alt={`${artifact.name}, step ${step.index + 1}`}
              data-testid="step-screenshot"
            />
          ) : null}
          <span class="muted">{artifact.name}</span>
        </li>
      ))}
    </ul>
  );
}

/** Completes the run with a verdict: the marks suggest one, the tester decides. */
function CompleteForm({ run, states, onDone }: { run: TestRun; states: StepState[]; onDone: () => void }) {
  const suggested = suggestedVerdict(states);
  const [verdict, setVerdict] = useState<Mark | undefined>();
  const chosen = verdict ?? suggested;
  const action = useAction();
  const unmarked = states.filter((s) => !s.mark).length;
  const complete = async (event: Event) => {
    event.preventDefault();
    const done = await action.run(
      (client) => client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: chosen } }),
      () => 'Completed.',
    );
    if (done) onDone();
  };
  return (
    <form class="panel complete-form" onSubmit={complete} aria-labelledby="complete-heading">
      <h2 id="complete-heading">Complete the run</h2>
      {unmarked > 0 ? (
        <p class="muted">
          {unmarked} step{unmarked === 1 ? ' has' : 's have'} no mark; they stay unrecorded.
        </p>
      ) : null}
      <label>
        Verdict
        <select value={chosen} onChange={(event) => setVerdict((event.target as HTMLSelectElement).value as Mark)}>
          {MARKS.map((m) => (
            <option key={m.mark} value={m.mark}>
              {m.done}
              {m.mark === suggested ? ' (from the steps)' : ''}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" disabled={action.busy}>
        Complete run
      </button>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </form>
  );
}
