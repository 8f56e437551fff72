import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { AttestHttp } from './http.ts';
import type { ArtifactKind, Verdict } from './mapping.ts';
import type { QueueItem } from './queue.ts';

/** What the reporter has sent, for the summary line. */
export interface Counts {
  runs: number;
  steps: number;
  attachments: number;
  /** Items not sent because what they hang on (the job, their run, a parent step) never reached the server. */
  skipped: number;
}

/** A `test.step` of an attempt, as the reporter tracks it. */
export interface StepNode {
  key: string;
  /** The step it is posted under: its parent's, or (past STEP_DEPTH_MAX) the deepest ancestor allowed. */
  parentKey?: string;
  /** Its depth as posted: 1 at the top, at most STEP_DEPTH_MAX. */
  depth: number;
  title: string;
  startedAt: string;
  failed: boolean;
  /** Its error message, once it ended with one. */
  error?: string;
  children: StepNode[];
}

/** One attempt of one test: one Attest run. */
export interface RunState {
  /** The create call's idempotency key; results and artifact keys are only unique within the run. */
  key: string;
  /** The run's id, once the server created it. */
  id?: string;
  steps: StepNode[];
  /** Step keys the server has stored: a child or an artifact may only name one of these. */
  stored: Set<string>;
  /** Ends of steps that failed, held until the attempt ends (see `onStepEnd`). */
  held: { node: StepNode; step: StepInput }[];
  nextStep: number;
  nextPost: number;
  nextArtifact: number;
  /** Its completion reached the server: the attempt is delivered, and never spooled. */
  delivered?: boolean;
}

export interface StepInput {
  key: string;
  parentKey?: string;
  title: string;
  status: 'running' | 'passed' | 'failed' | 'broken' | 'skipped';
  startedAt?: string;
  durationMs?: number;
  error?: string;
}

export interface CellInput {
  name: string;
  text: string;
}

/** Most steps one results post carries when consecutive posts of a run are merged. */
const STEPS_PER_POST = 500;

/**
 * Steps and cells for a run. Consecutive results items of the same run merge into one post, and a
 * step that starts and ends within it goes once with its final status, so a fast test costs one
 * call, not two per step.
 */
export class ResultsItem implements QueueItem {
  readonly kind: string;
  readonly essential = false;
  readonly bytes = 0;
  private readonly http: AttestHttp;
  private readonly run: RunState;
  private readonly counts: Counts;
  private readonly steps: StepInput[];
  private readonly cells: CellInput[];

  constructor(http: AttestHttp, run: RunState, counts: Counts, items: { steps?: StepInput[]; cells?: CellInput[] }) {
    this.http = http;
    this.run = run;
    this.counts = counts;
    this.steps = [...(items.steps ?? [])];
    this.cells = [...(items.cells ?? [])];
    this.kind = this.steps.length ? 'step' : 'cell';
  }

  absorb(next: QueueItem): boolean {
    if (!(next instanceof ResultsItem) || next.run !== this.run || this.steps.length + next.steps.length > STEPS_PER_POST) return false;
    for (const step of next.steps) {
      const started = this.steps.findIndex((s) => s.key === step.key && s.status === 'running');
      if (started === -1) this.steps.push(step);
      else this.steps[started] = { ...this.steps[started], ...step };
    }
    this.cells.push(...next.cells);
    return true;
  }

  async send(): Promise<void> {
    const run = this.run;
    if (!run.id) {
      this.counts.skipped += this.steps.length + this.cells.length;
      return;
    }
    // A step whose parent never reached the server cannot be stored; nor can its children.
    const known = new Set(run.stored);
    const steps = this.steps.filter((step) => {
      const ok = step.parentKey === undefined || known.has(step.parentKey);
      if (ok) known.add(step.key);
      else this.counts.skipped++;
      return ok;
    });
    if (!steps.length && !this.cells.length) return;
    const body = { steps, cells: this.cells, idempotencyKey: `r${run.nextPost++}` };
    await this.http.json('POST', `/testmgmt/testruns/${run.id}/results`, body);
    for (const step of steps) {
      run.stored.add(step.key);
      if (step.status !== 'running') this.counts.steps++;
    }
  }
}

export interface AttachmentSource {
  name: string;
  contentType?: string;
  path?: string;
  body?: Uint8Array;
}

/** One attachment of an attempt, uploaded as an artifact; its file is read only when it is sent. */
export function artifactItem(
  http: AttestHttp,
  projectId: () => string | undefined,
  run: RunState,
  counts: Counts,
  attachment: AttachmentSource & { kind: ArtifactKind; stepKey?: string },
): QueueItem {
  const bytes = attachment.body?.byteLength ?? fileSize(attachment.path);
  const key = `a${run.nextArtifact++}`;
  return {
    kind: 'attachment',
    essential: false,
    bytes,
    async send() {
      const project = projectId();
      if (!run.id || !project) return void counts.skipped++;
      const content = attachment.body ?? (await readFile(attachment.path!));
      // The step only when the server stored it; else the evidence still belongs to the run.
      const stepKey = attachment.stepKey && run.stored.has(attachment.stepKey) ? attachment.stepKey : undefined;
      const metadata = {
        testRunId: run.id,
        kind: attachment.kind,
        name: attachment.name,
        idempotencyKey: key,
        ...(stepKey ? { stepKey } : {}),
      };
      const fileName = attachment.path ? basename(attachment.path) : attachment.name;
      await http.multipart(`/projects/${project}/artifact`, () => {
        const form = new FormData();
        form.append('metadata', JSON.stringify(metadata));
        form.append('file', new Blob([content], { type: attachment.contentType ?? 'application/octet-stream' }), fileName);
        return form;
      });
      counts.attachments++;
    },
  };
}

/**
 * A failed `toHaveScreenshot` as one `visual-diff` artifact: the upload's `baseline`, `actual` and
 * `diff` file parts (SPEC 2.1), each read only when it is sent.
 */
export function visualDiffItem(
  http: AttestHttp,
  projectId: () => string | undefined,
  run: RunState,
  counts: Counts,
  diff: { name: string; baseline: AttachmentSource; actual: AttachmentSource; diff: AttachmentSource; stepKey?: string },
): QueueItem {
  const parts = [
    ['baseline', diff.baseline],
    ['actual', diff.actual],
    ['diff', diff.diff],
  ] as const;
  const key = `a${run.nextArtifact++}`;
  return {
    kind: 'attachment',
    essential: false,
    bytes: parts.reduce((sum, [, part]) => sum + (part.body?.byteLength ?? fileSize(part.path)), 0),
    async send() {
      const project = projectId();
      if (!run.id || !project) return void counts.skipped++;
      const contents = await Promise.all(parts.map(([, part]) => part.body ?? readFile(part.path!)));
      const stepKey = diff.stepKey && run.stored.has(diff.stepKey) ? diff.stepKey : undefined;
      const metadata = { testRunId: run.id, kind: 'visual-diff', name: diff.name, idempotencyKey: key, ...(stepKey ? { stepKey } : {}) };
      await http.multipart(`/projects/${project}/artifact`, () => {
        const form = new FormData();
        form.append('metadata', JSON.stringify(metadata));
        parts.forEach(([field, part], i) => {
          const name = part.path ? basename(part.path) : part.name;
          form.append(field, new Blob([contents[i]!], { type: part.contentType ?? 'application/octet-stream' }), name);
        });
        return form;
      });
      counts.attachments++;
    },
  };
}

/** Creates the attempt's run in the job. */
export function createRunItem(
  http: AttestHttp,
  context: () => { projectId?: string; jobId?: string },
  run: RunState,
  counts: Counts,
  body: { name: string; testName: string; attempt: number; labels: Record<string, string> },
): QueueItem {
  return {
    kind: 'run',
    essential: true,
    bytes: 0,
    async send() {
      const { projectId, jobId } = context();
      if (!projectId || !jobId) return void counts.skipped++;
      const created = await http.json<{ id: string }>('POST', '/testmgmt/testruns', {
        projectId,
        jobId,
        name: body.name,
        testName: body.testName,
        // The server folds a test's attempts in a job; its contract takes at most 100.
        attempt: Math.min(body.attempt, 100),
        idempotencyKey: run.key,
        ...body.labels,
      });
      run.id = created.id;
      counts.runs++;
    },
  };
}

/** Completes the run with the attempt's verdict (a repeated PATCH to the same state changes nothing). */
export function completeRunItem(http: AttestHttp, run: RunState, counts: Counts, verdict: Verdict): QueueItem {
  return {
    kind: 'completion',
    essential: true,
    bytes: 0,
    async send() {
      if (!run.id) return void counts.skipped++;
      await http.json('PATCH', `/testmgmt/testruns/${run.id}`, { status: 'completed', verdict });
      run.delivered = true;
    },
  };
}

function fileSize(path: string | undefined): number {
  try {
    return path ? statSync(path).size : 0;
  } catch {
    return 0;
  }
}
