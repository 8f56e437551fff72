import type { EventData } from './outbox.ts';

// Slack and Microsoft Teams targets (HOOK-8): an event becomes a message a person reads — the
// verdict, the counts, the failures with links to their run pages and their first screenshot —
// posted to an incoming-webhook URL instead of the raw event.

interface Message {
  title: string;
  /** passed / failed colour the message; null: neutral. */
  verdict: 'passed' | 'failed' | null;
  lines: string[];
  /** Each with its run page and the first screenshot's thumbnail, when known. */
  items: { text: string; url: string | null; screenshotUrl: string | null }[];
  /** The pages to open: Attest's first, then others (the CI build). */
  links: { label: string; url: string }[];
}

interface Event {
  type: string;
  data: unknown;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** A job's verdict, its test counts, its CI build and its comparison with the base, and its failures. */
function jobMessage(data: EventData<'job.completed'>): Message {
  const { project, job, failures, comparison } = data;
  // Tests, retries folded (TRIAGE-14): a flaky test passed, and is named as flaky.
  const t = job.tests;
  const bad = t.failed + t.broken > 0;
  const lines = [
    `${plural(t.total, 'test')}: ${t.passed + t.flaky} passed${t.flaky ? ` (${t.flaky} flaky)` : ''}, ${t.failed} failed` +
      `${t.broken ? `, ${t.broken} broken` : ''}, ${t.skipped} skipped${t.unfinished ? `, ${t.unfinished} unfinished` : ''}`,
  ];
  const ci = [job.branch ? `Branch ${job.branch}` : '', job.build ? `build ${job.build}` : ''].filter(Boolean).join(', ');
  if (ci) lines.push(ci.charAt(0).toUpperCase() + ci.slice(1));
  if (comparison.baseJobId !== null) {
    lines.push(
      `Against ${comparison.baseBranch ?? 'the base branch'}: ${plural(comparison.newFailures.length, 'new failure')}, ` +
        `${comparison.fixed.length} fixed, ${plural(comparison.newErrorGroups.length, 'new error group')}`,
    );
  }
  return {
    title: `${project.key}: job "${job.name}" ${bad ? 'failed' : 'passed'}`,
    verdict: bad ? 'failed' : 'passed',
    lines,
    items: failures.map((failure) => ({
      text: `${failure.name}: ${failure.verdict}`,
      url: failure.url,
      screenshotUrl: failure.screenshotUrl,
    })),
    links: [
      ...(job.url ? [{ label: 'Open the job', url: job.url }] : []),
      ...(job.ciUrl ? [{ label: 'Open the CI build', url: job.ciUrl }] : []),
    ],
  };
}

/** What a person should read about an event. */
export function messageOf(event: Event): Message {
  switch (event.type) {
    case 'run.completed': {
      const { project, run } = event.data as EventData<'run.completed'>;
      const bad = run.verdict === 'failed' || run.verdict === 'broken';
      return {
        title: `${project.key}: run "${run.name}" ${run.verdict ?? run.status}`,
        verdict: bad ? 'failed' : run.verdict === 'passed' ? 'passed' : null,
        lines: [run.branch ? `Branch ${run.branch}${run.commit ? ` at ${run.commit.slice(0, 12)}` : ''}` : ''].filter(Boolean),
        items: [],
        links: run.url ? [{ label: 'Open the run', url: run.url }] : [],
      };
    }
    case 'run.failed_first': {
      const { project, job, run } = event.data as EventData<'run.failed_first'>;
      return {
        title: `${project.key}: first failure in job "${job.name}"`,
        verdict: 'failed',
        lines: ['The job is still running.'],
        items: [{ text: `${run.name}: ${run.verdict}`, url: run.url, screenshotUrl: null }],
        links: job.url ? [{ label: 'Open the job', url: job.url }] : [],
      };
    }
    case 'job.completed':
      return jobMessage(event.data as EventData<'job.completed'>);
    case 'import.completed': {
      const { project, import: imported } = event.data as EventData<'import.completed'>;
      return {
        title: `${project.key}: import of ${imported.fileName} completed`,
        verdict: null,
        lines: [`${plural(imported.cases, 'test case')} read.`],
        items: [],
        links: imported.url ? [{ label: 'Open the job', url: imported.url }] : [],
      };
    }
    case 'quarantine.expired': {
      const { project, test, quarantine } = event.data as EventData<'quarantine.expired'>;
      return {
        title: `${project.key}: quarantine of "${test.name}" expired`,
        verdict: null,
        lines: [`Owner ${quarantine.owner}: ${quarantine.reason}`],
        items: [],
        links: test.url ? [{ label: 'Open the test', url: test.url }] : [],
      };
    }
    case 'test.quarantined':
    case 'test.fix_pending':
    case 'test.fixed':
    case 'test.unquarantined':
    case 'test.disabled':
    case 'test.enabled':
      return lifecycleMessage(event.type, event.data as EventData<'test.fixed'>);
    default: {
      const { project } = event.data as EventData<'webhook.test'>;
      return { title: `${project.key}: test message from Attest`, verdict: null, lines: ['This webhook works.'], items: [], links: [] };
    }
  }
}

const LIFECYCLE_TITLES: Record<string, string> = {
  'test.quarantined': 'quarantined',
  'test.fix_pending': 'has a fix attempt to verify',
  'test.fixed': 'is fixed: its quarantine is released',
  'test.unquarantined': 'was released from quarantine',
  'test.disabled': 'was disabled',
  'test.enabled': 'was enabled',
};

/** A transition of a test's quarantine lifecycle (TRIAGE-13), in words. */
function lifecycleMessage(type: string, data: EventData<'test.fixed'>): Message {
  const { project, test, quarantine, fixAttempt, run, reason } = data;
  const lines: string[] = [];
  if (type === 'test.quarantined' && fixAttempt?.outcome === 'failed')
    lines.push(`The fix attempt failed after ${plural(fixAttempt.passes, 'passing run')}.`);
  else if (type === 'test.fixed' && fixAttempt)
    lines.push(`${plural(fixAttempt.passes, 'passing run')} in a row${fixAttempt.branch ? ` on ${fixAttempt.branch}` : ''}.`);
  else if (type === 'test.fix_pending' && fixAttempt)
    lines.push(`The next ${plural(fixAttempt.required, 'run')}${fixAttempt.branch ? ` on ${fixAttempt.branch}` : ''} must pass.`);
  if (quarantine && type === 'test.quarantined') lines.push(`Owner ${quarantine.owner}: ${quarantine.reason}`);
  if (reason) lines.push(reason);
  return {
    title: `${project.key}: "${test.name}" ${LIFECYCLE_TITLES[type] ?? type}`,
    verdict: type === 'test.fixed' ? 'passed' : type === 'test.quarantined' ? 'failed' : null,
    lines,
    items: run ? [{ text: type === 'test.fixed' ? 'The last passing run' : 'The failing run', url: run.url, screenshotUrl: null }] : [],
    links: test.url ? [{ label: 'Open the test', url: test.url }] : [],
  };
}

/** Slack's mrkdwn needs &, < and > escaped; links are <url|label>. */
const slackText = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const slackLink = (url: string, label: string) => `<${url}|${slackText(label)}>`;

/** Slack's incoming-webhook body: `text` for notifications, blocks for the message. */
export function slackMessage(event: Event): unknown {
  const m = messageOf(event);
  const mark = m.verdict === 'failed' ? ':x: ' : m.verdict === 'passed' ? ':white_check_mark: ' : '';
  const blocks: unknown[] = [{ type: 'section', text: { type: 'mrkdwn', text: `${mark}*${slackText(m.title)}*` } }];
  if (m.lines.length > 0) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: m.lines.map(slackText).join('\n') } });
  if (m.items.length > 0) {
    const list = m.items.map((item) => {
      const text = item.url ? slackLink(item.url, item.text) : slackText(item.text);
      return `• ${text}${item.screenshotUrl ? ` (${slackLink(item.screenshotUrl, 'screenshot')})` : ''}`;
    });
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: list.join('\n').slice(0, 2900) } });
  }
  if (m.links.length > 0) {
    blocks.push({
      type: 'context',
      elements: [{ type: 'mrkdwn', text: m.links.map((link) => slackLink(link.url, link.label)).join(' · ') }],
    });
  }
  return { text: `${mark}${m.title}`, blocks };
}

const teamsText = (text: string) => text.replace(/([\\`*_[\]<>])/g, '\\$1');

/** A Microsoft Teams incoming-webhook (Workflows) body: one Adaptive Card. */
export function teamsMessage(event: Event): unknown {
  const m = messageOf(event);
  const body: unknown[] = [
    {
      type: 'TextBlock',
      text: m.title,
      weight: 'Bolder',
      size: 'Medium',
      wrap: true,
      color: m.verdict === 'failed' ? 'Attention' : m.verdict === 'passed' ? 'Good' : 'Default',
    },
    ...m.lines.map((line) => ({ type: 'TextBlock', text: teamsText(line), wrap: true })),
    ...m.items.map((item) => ({
      type: 'TextBlock',
      wrap: true,
      text:
        `- ${item.url ? `[${teamsText(item.text)}](${item.url})` : teamsText(item.text)}` +
        (item.screenshotUrl ? ` ([screenshot](${item.screenshotUrl}))` : ''),
    })),
  ];
  const content = {
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    type: 'AdaptiveCard',
    version: '1.4',
    body,
    actions: m.links.map((link) => ({ type: 'Action.OpenUrl', title: link.label, url: link.url })),
  };
  return { type: 'message', attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content }] };
}
