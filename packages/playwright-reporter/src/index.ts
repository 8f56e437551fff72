import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FullConfig, FullResult, Reporter, Suite, TestCase, TestError, TestResult, TestStep } from '@playwright/test/reporter';
import { writeCiOutputs } from './ci-outputs.ts';
import { AttestHttp, SendError } from './http.ts';
import {
  artifactItem,
  type Counts,
  completeRunItem,
  createRunItem,
  ResultsItem,
  type RunState,
  type StepInput,
  type StepNode,
  visualDiffItem,
} from './items.ts';
import {
  artifactNameOf,
  attachmentKind,
  attachmentStep,
  clip,
  errorCellText,
  formatError,
  fullNameOf,
  groupVisualDiffs,
  runNameOf,
  STEP_DEPTH_MAX,
  STEP_TITLE_MAX,
  skipReasonOf,
  stdioText,
  stepErrorOf,
  stepStatusOf,
  verdictOf,
  visualDiffStep,
} from './mapping.ts';
import { type AttestReporterOptions, resolveSettings, type Settings } from './options.ts';
import { SendQueue } from './queue.ts';
import { type SpooledAttempt, type SpoolOutcome, spooledFiles, spoolTargetOf, writeSpool } from './spool.ts';

export type { AttestReporterOptions } from './options.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Streams a Playwright run into Attest while it runs: a job for the whole run (onBegin), a run per
 * test attempt (onTestBegin), its `test.step`s as they start and end, its attachments and verdict
 * when it ends. Everything goes through one ordered, bounded queue sent in the background; a slow
 * or dead server never fails a test and delays the end of the run by at most `flushTimeoutMs`.
 */
export default class AttestReporter implements Reporter {
  private readonly settings: Settings | { off: string };
  private http?: AttestHttp;
  private queue?: SendQueue;
  private readonly counts: Counts = { runs: 0, steps: 0, attachments: 0, skipped: 0 };
  private readonly runs = new WeakMap<TestResult, RunState>();
  private readonly nodes = new WeakMap<TestStep, StepNode>();
  private readonly jobKey = `playwright-${randomUUID()}`;
  private projectId?: string;
  private jobId?: string;
  private severalProjects = false;
  private failures = 0;
  /** Refusals (4xx answers) among the failures: they say nothing about the server, and are not spooled. */
  private refusals = 0;
  /** Whether the server was down, erring (5xx) or too slow at some point: what was not delivered is spooled. */
  private outage = false;
  private readonly attempts: (SpooledAttempt & { run: RunState })[] = [];
  private projectNames: string[] = [];
  private spoolDir = '';
  private jobIdFile = '';
  private spooled?: SpoolOutcome;
  private spoolSent = 0;
  private jobClosed = false;
  private suite?: Suite;
  /** The project's quarantines that have not expired, by the full name of their test; undefined until read. */
  private quarantined?: Map<string, { owner: string; expiresAt: string }>;
  /** Errors outside every test (global setup, a worker crash): a run with one fails whatever is quarantined. */
  private runErrors = 0;

  constructor(options: AttestReporterOptions = {}) {
    this.settings = resolveSettings(options, process.env);
  }

  printsToStdio(): boolean {
    return false;
  }

  onBegin(config: FullConfig, suite: Suite): void {
    if ('off' in this.settings) return;
    this.suite = suite;
    const settings = this.settings;
    this.severalProjects = config.projects.length > 1;
    this.projectNames = config.projects.map((project) => project.name);
    const configDir = config.configFile ? path.dirname(config.configFile) : config.rootDir;
    this.spoolDir = path.resolve(settings.spoolDir ?? path.join(configDir, '.attest-spool'));
    this.jobIdFile = path.resolve(settings.jobIdFile ?? path.join(configDir, '.attest-job'));
    this.http = new AttestHttp(settings);
    this.queue = new SendQueue({ maxItems: settings.maxQueuedItems, maxBytes: settings.maxQueuedBytes }, (error) => this.failed(error));
    this.queue.push({ kind: 'job', essential: true, bytes: 0, send: () => this.createJob(settings) });
    // The project's quarantined tests: their failures do not fail the run (docs/triage.md, TRIAGE-6).
    this.queue.push({ kind: 'quarantine', essential: true, bytes: 0, send: () => this.readQuarantine() });
    // What an earlier run could not deliver goes first, as imports of their own (spool.ts).
    this.queue.push({ kind: 'spool', essential: true, bytes: 0, send: () => this.sendSpool(settings) });
  }

  onTestBegin(test: TestCase, result: TestResult): void {
    if (!this.queue || !this.http) return;
    const run: RunState = {
      key: `${this.jobKey}:${test.id}:${result.retry}`,
      steps: [],
      stored: new Set(),
      held: [],
      nextStep: 0,
      nextPost: 0,
      nextArtifact: 0,
    };
    this.runs.set(result, run);
    const testName = this.fullNameOf(test);
    const labels = 'off' in this.settings ? {} : this.settings.labels;
    this.queue.push(
      createRunItem(this.http, () => ({ projectId: this.projectId, jobId: this.jobId }), run, this.counts, {
        name: runNameOf(test.title),
        testName,
        attempt: result.retry,
        labels,
      }),
    );
  }

  onStepBegin(_test: TestCase, result: TestResult, step: TestStep): void {
    const run = this.runs.get(result);
    if (!run || !this.queue || !this.http || !isReportedStep(step)) return;
    const parent = step.parent ? this.nodes.get(step.parent) : undefined;
    // Attest nests steps at most STEP_DEPTH_MAX deep; a deeper one hangs beside its parent, as the import places it.
    const under = parent && parent.depth >= STEP_DEPTH_MAX ? { key: parent.parentKey, depth: parent.depth - 1 } : parent;
    const node: StepNode = {
      key: `s${run.nextStep++}`,
      ...(under?.key ? { parentKey: under.key } : {}),
      depth: (under?.depth ?? 0) + 1,
      title: clip(step.title || '(untitled step)', STEP_TITLE_MAX),
      startedAt: step.startTime.toISOString(),
      failed: false,
      children: [],
    };
    this.nodes.set(step, node);
    (parent ? parent.children : run.steps).push(node);
    this.queue.push(new ResultsItem(this.http, run, this.counts, { steps: [{ ...stepFields(node), status: 'running' }] }));
  }

  onStepEnd(_test: TestCase, result: TestResult, step: TestStep): void {
    const run = this.runs.get(result);
    const node = this.nodes.get(step);
    if (!run || !node || !this.queue || !this.http) return;
    const error = stepErrorOf(step.error);
    if (error !== undefined) node.error = error;
    const end: StepInput = {
      ...stepFields(node),
      status: 'passed',
      durationMs: Math.max(0, Math.round(step.duration)),
      ...(error !== undefined ? { error } : {}),
    };
    // A step with an error failed, unless the error is the test skipping itself; only the
    // attempt's final status tells (`result.status` reads `skipped` until the attempt ends), so
    // its end is held until onTestEnd.
    if (step.error !== undefined) run.held.push({ node, step: end });
    else this.queue.push(new ResultsItem(this.http, run, this.counts, { steps: [end] }));
  }

  onTestEnd(test: TestCase, result: TestResult): void {
    const run = this.runs.get(result);
    if (!run || !this.queue || !this.http) return;
    this.attempts.push({ test, result, run });
    this.endHeldSteps(run, result.status);
    const cells = [
      { name: 'skipped', text: skipReasonOf(result.status, result.annotations ?? []) },
      { name: 'error', text: errorCellText(result.errors.map((e) => formatError(e))) },
      { name: 'stdout', text: stdioText(result.stdout) },
      { name: 'stderr', text: stdioText(result.stderr) },
    ].filter((cell): cell is { name: string; text: string } => cell.text !== undefined);
    if (cells.length) this.queue.push(new ResultsItem(this.http, run, this.counts, { cells }));
    const tree = { children: (s: StepNode) => s.children, failed: (s: StepNode) => s.failed, error: (s: StepNode) => s.error };
    const attachments = result.attachments
      .filter((attachment) => attachment.body || attachment.path)
      .map((attachment) => ({ ...attachment, name: artifactNameOf(attachment.name, attachment.contentType) }));
    for (const group of groupVisualDiffs(attachments)) {
      if ('visualDiff' in group) {
        // A failed toHaveScreenshot: one visual diff on the step that made it, by the import's rule.
        const { name, baseline, actual, diff } = group.visualDiff;
        const step = visualDiffStep(name, run.steps, tree);
        this.queue.push(
          visualDiffItem(this.http, () => this.projectId, run, this.counts, {
            name,
            baseline,
            actual,
            diff,
            ...(step ? { stepKey: step.key } : {}),
          }),
        );
        continue;
      }
      const attachment = group.attachment;
      // The placement rule is mapping.ts's `attachmentStep`, the import's too: `TestStep.attachments`
      // is not used, because a JSON report cannot tell it.
      const step = attachmentStep(attachment.name, run.steps, tree);
      const kind = attachmentKind(attachment.name, attachment.contentType);
      this.queue.push(
        artifactItem(this.http, () => this.projectId, run, this.counts, { ...attachment, kind, ...(step ? { stepKey: step.key } : {}) }),
      );
    }
    this.queue.push(completeRunItem(this.http, run, this.counts, verdictOf(result.status)));
  }

  onError(_error: TestError): void {
    this.runErrors++;
  }

  async onEnd(result: FullResult): Promise<{ status?: FullResult['status'] } | undefined> {
    if ('off' in this.settings) {
      process.stderr.write(`attest: not sending results: ${this.settings.off}\n`);
      return undefined;
    }
    const settings = this.settings;
    const queue = this.queue!;
    // The launch is closed last, once every run in it is sent: the job then completes (and stays `running` until then).
    queue.push({ kind: 'job', essential: true, bytes: 0, send: () => this.closeJob() });
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([
      queue.drained().then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), settings.flushTimeoutMs);
      }),
    ]);
    clearTimeout(timer);
    let late = 0;
    if (!inTime) {
      late = queue.close();
      this.http!.stop();
      await queue.drained();
      this.outage = true;
    }
    const undelivered = this.attempts.filter((attempt) => !attempt.run.delivered);
    if (this.outage && undelivered.length) {
      try {
        this.spooled = writeSpool(
          this.spoolDir,
          settings.maxSpoolBytes,
          { url: settings.url, project: this.projectId ?? settings.project, jobName: settings.jobName, labels: spoolLabels(settings) },
          this.projectNames,
          undelivered,
        );
      } catch (error) {
        this.spooled = {
          attempts: undelivered.length,
          attachmentsLeftOut: 0,
          refused: `cannot write ${this.spoolDir}: ${errorMessage(error)}`,
        };
      }
    }
    process.stderr.write(`${this.summary(settings, late)}\n`);
    const verdict = this.quarantineVerdict(result);
    this.leaveCiOutputs(settings);
    return verdict;
  }

  /** The job's id for the next CI step, and in GitHub Actions its outputs and a job summary (REP-1). */
  private leaveCiOutputs(settings: Settings): void {
    if (!this.jobId || !this.suite) return;
    const tally = { passed: 0, failed: 0, flaky: 0, skipped: 0 };
    for (const test of this.suite.allTests()) {
      const outcome = test.outcome();
      if (outcome === 'expected') tally.passed++;
      else if (outcome === 'unexpected') tally.failed++;
      else if (outcome === 'flaky') tally.flaky++;
      else tally.skipped++;
    }
    const quarantined = this.suite
      .allTests()
      .filter((test) => test.outcome() === 'unexpected' && this.quarantined?.has(this.fullNameOf(test)))
      .map((test) => this.fullNameOf(test));
    const problems = writeCiOutputs(
      {
        jobId: this.jobId,
        jobName: settings.jobName,
        jobUrl: `${settings.url}/jobs/${this.jobId}`,
        tally,
        quarantined,
        idFile: this.jobIdFile,
      },
      process.env,
    );
    for (const problem of problems) process.stderr.write(`attest: ${problem}\n`);
  }

  /** A test's full name as Attest keys it. titlePath(): ['', project, file, ...describes, title]; the rules are mapping.ts's, shared with the import. */
  private fullNameOf(test: TestCase): string {
    return fullNameOf(test.titlePath().slice(2), test.parent.project()?.name ?? '', this.severalProjects);
  }

  /** `GET /projects/{projectId}/quarantine`: the quarantines that have not expired, by full name. */
  private async readQuarantine(): Promise<void> {
    if (!this.projectId) return;
    const list = await this.http!.json<{ items: { fullName: string | null; owner: string; expiresAt: string; expired: boolean }[] }>(
      'GET',
      `/projects/${this.projectId}/quarantine`,
    );
    this.quarantined = new Map(
      list.items.flatMap((item) =>
        item.fullName && !item.expired ? [[item.fullName, { owner: item.owner, expiresAt: item.expiresAt }]] : [],
      ),
    );
  }

  /**
   * Prints the failed tests that are quarantined, and passes a run whose only failures they are: a
   * quarantined test still runs and reports, but does not fail the CI job. Without the list (the
   * server was down), with an error outside the tests, or a run that timed out or was interrupted,
   * Playwright's own status stands.
   */
  private quarantineVerdict(result: FullResult): { status: FullResult['status'] } | undefined {
    if (!this.quarantined || !this.suite) return undefined;
    const failing = this.suite.allTests().filter((test) => test.outcome() === 'unexpected');
    const excused = failing.filter((test) => this.quarantined!.has(this.fullNameOf(test)));
    for (const test of excused) {
      const { owner, expiresAt } = this.quarantined.get(this.fullNameOf(test))!;
      process.stderr.write(`attest: quarantined: ${this.fullNameOf(test)} failed (owner ${owner}, until ${expiresAt})\n`);
    }
    if (excused.length === 0 || excused.length < failing.length || this.runErrors > 0 || result.status !== 'failed') return undefined;
    process.stderr.write(`attest: every failed test is quarantined (${excused.length}): the run passes\n`);
    return { status: 'passed' };
  }

  /** Sends each spooled report for this server as an import, deleting it once the server took it. */
  private async sendSpool(settings: Settings): Promise<void> {
    for (const file of spooledFiles(this.spoolDir)) {
      if (this.http!.down) return;
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch {
        continue; // Sent and deleted meanwhile by a parallel run (a shard on the same machine).
      }
      const target = spoolTargetOf(text);
      if (!target || target.url !== settings.url) continue;
      const query = new URLSearchParams({
        name: `${target.jobName} (spooled)`.slice(0, 256),
        format: 'playwright',
        // The file's name: a retry, or a parallel run sending the same file, is the same import.
        idempotencyKey: `spool:${path.basename(file, '.json')}`,
        ...target.labels,
      });
      try {
        await this.http!.raw(`/projects/${encodeURIComponent(target.project)}/imports?${query}`, Buffer.from(text), 'application/json');
        fs.rmSync(file, { force: true });
        this.spoolSent++;
      } catch (error) {
        // One refused file (a project gone, a key without access) must not hold back the others.
        this.failed(error);
      }
    }
  }

  /** Closes the launch: `POST /testmgmt/jobs/{jobId}/complete` (idempotent on the server). */
  private async closeJob(): Promise<void> {
    if (!this.jobId) return;
    await this.http!.json('POST', `/testmgmt/jobs/${this.jobId}/complete`);
    this.jobClosed = true;
  }

  private endHeldSteps(run: RunState, resultStatus: string): void {
    if (!run.held.length) return;
    const steps = run.held.map(({ node, step }) => {
      const status = stepStatusOf(true, resultStatus);
      node.failed = status === 'failed';
      return { ...step, status };
    });
    run.held = [];
    this.queue!.push(new ResultsItem(this.http!, run, this.counts, { steps }));
  }

  private async createJob(settings: Settings): Promise<void> {
    this.projectId = await this.resolveProject(settings);
    const job = await this.http!.json<{ id: string }>('POST', '/testmgmt/jobs', {
      projectId: this.projectId,
      name: settings.jobName,
      testIds: [],
      idempotencyKey: this.jobKey,
      ...settings.labels,
      ...(settings.targetBranch ? { targetBranch: settings.targetBranch } : {}),
    });
    this.jobId = job.id;
  }

  /** A project id as it is; a key (`WEB`) looked up in the caller's projects. */
  private async resolveProject(settings: Settings): Promise<string> {
    if (UUID.test(settings.project)) return settings.project;
    const page = await this.http!.json<{ items: { id: string }[] }>('GET', `/projects?key=${encodeURIComponent(settings.project)}`);
    const found = page.items[0];
    if (!found) throw new SendError(`no project with the key ${settings.project} is visible to this API key`);
    return found.id;
  }

  /** Counts every failed call; says the first one, so a dead server is one line, not one per result. */
  private failed(error: unknown): void {
    this.failures++;
    if (error instanceof SendError && error.outage) this.outage = true;
    else if (error instanceof SendError && error.status !== undefined) this.refusals++;
    if (this.failures === 1) {
      const message = error instanceof Error ? error.message : String(error);
      process.stderr.write(`attest: ${message} (further failures are counted in the summary)\n`);
    }
  }

  private summary(settings: Settings, late: number): string {
    const { runs, steps, attachments, skipped } = this.counts;
    const parts = [
      `attest: sent ${runs} runs, ${steps} steps, ${attachments} attachments to ${settings.url} (job ${this.jobId ?? 'not created'})`,
    ];
    if (this.failures) parts.push(`${this.failures} calls failed${this.refusals ? ` (${this.refusals} refused)` : ''}`);
    if (this.spoolSent) parts.push(`sent ${this.spoolSent} spooled reports from ${this.spoolDir}`);
    if (this.spooled?.file) {
      const leftOut = this.spooled.attachmentsLeftOut ? ` without ${this.spooled.attachmentsLeftOut} attachments (the spool is full)` : '';
      parts.push(`spooled ${this.spooled.attempts} runs to ${this.spooled.file}${leftOut}; the next run sends them`);
    } else if (this.spooled?.refused) {
      parts.push(`${this.spooled.attempts} runs lost: ${this.spooled.refused}`);
    }
    if (this.jobId && !this.jobClosed) parts.push('the job was not closed (the server ends it after its idle time)');
    if (skipped) parts.push(`${skipped} items not sent (what they belong to was not created)`);
    const drops = [...this.queue!.drops].map(([kind, n]) => `${n} ${kind}`);
    if (drops.length) parts.push(`dropped ${drops.join(', ')}`);
    if (late) parts.push(`${late} items left at the ${Math.round(settings.flushTimeoutMs / 1000)} s deadline`);
    return parts.join('; ');
  }
}

/** The labels a spooled report's import carries (its `ciUrl` and the job's `targetBranch` included): the run's own. */
function spoolLabels(settings: Settings): Record<string, string> {
  const labels = { ...settings.labels, ...(settings.targetBranch ? { targetBranch: settings.targetBranch } : {}) };
  return Object.fromEntries(Object.entries(labels).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

const errorMessage = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Only `test.step`s under `test.step`s: what the JSON report keeps (a step inside a hook is dropped there too). */
function isReportedStep(step: TestStep): boolean {
  for (let s: TestStep | undefined = step; s; s = s.parent) if (s.category !== 'test.step') return false;
  return true;
}

const stepFields = (node: StepNode) => ({
  key: node.key,
  ...(node.parentKey ? { parentKey: node.parentKey } : {}),
  title: node.title,
  startedAt: node.startedAt,
});
