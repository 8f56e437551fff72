import http from 'node:http';
import type { AddressInfo } from 'node:net';

// A local HTTP server standing in for the GitHub, GitLab and Jira APIs (docs/integrations.md): it
// records every request (method, path, headers, JSON body) and answers as the real API does for
// the calls Attest makes, keeping check runs, comments, notes and issues in memory.

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

interface Comment {
  id: number;
  body: string;
}

export interface StandIn {
  url: string;
  requests: RecordedRequest[];
  /** GitHub check runs by id, as last written. */
  checkRuns: Map<number, Record<string, unknown>>;
  /** Comments on GitHub pull request 7 / notes on GitLab merge request 3. */
  comments: Comment[];
  /** Jira issues and GitHub issues by key. */
  issues: Map<string, { title: string; status: string }>;
  /** Answer this status to the next `n` requests (a tracker that is down). */
  failNext(n: number, status?: number): void;
  close(): Promise<void>;
}

export const PULL_NUMBER = 7;
export const MERGE_REQUEST_IID = 3;

export async function startStandIn(): Promise<StandIn> {
  const requests: RecordedRequest[] = [];
  const checkRuns = new Map<number, Record<string, unknown>>();
  const comments: Comment[] = [];
  const issues = new Map<string, { title: string; status: string }>();
  let nextId = 1000;
  let failures = { n: 0, status: 500 };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = null;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        body = text;
      }
      const url = new URL(req.url ?? '/', 'http://stand-in');
      const method = req.method ?? 'GET';
      requests.push({ method, path: url.pathname, headers: req.headers, body });
      const send = (status: number, answer: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(answer === undefined ? '' : JSON.stringify(answer));
      };
      if (failures.n > 0) {
        failures.n--;
        return send(failures.status, { message: 'stand-in failure' });
      }
      const path = url.pathname;
      const b = (body ?? {}) as Record<string, unknown>;
      const match = (verb: string, pattern: RegExp) => (method === verb ? pattern.exec(path) : null);

      // GitHub
      if (method === 'POST' && /^\/app\/installations\/\d+\/access_tokens$/.test(path))
        return send(201, { token: 'ghs_installation_token' });
      if (method === 'POST' && /^\/repos\/[^/]+\/[^/]+\/check-runs$/.test(path)) {
        const id = nextId++;
        checkRuns.set(id, { ...b, id });
        return send(201, { id, ...b });
      }
      const checkRunPath = match('PATCH', /^\/repos\/[^/]+\/[^/]+\/check-runs\/(\d+)$/);
      if (checkRunPath) {
        const id = Number(checkRunPath[1]);
        const run = checkRuns.get(id);
        if (!run) return send(404, { message: 'Not Found' });
        checkRuns.set(id, { ...run, ...b });
        return send(200, checkRuns.get(id));
      }
      if (method === 'GET' && /^\/repos\/[^/]+\/[^/]+\/commits\/[^/]+\/pulls$/.test(path)) {
        return send(200, [{ number: PULL_NUMBER, state: 'open' }]);
      }
      if (method === 'GET' && path.endsWith(`/issues/${PULL_NUMBER}/comments`)) return send(200, comments);
      if (method === 'POST' && path.endsWith(`/issues/${PULL_NUMBER}/comments`)) {
        const comment = { id: nextId++, body: String(b.body) };
        comments.push(comment);
        return send(201, comment);
      }
      const commentPath = match('PATCH', /\/issues\/comments\/(\d+)$/);
      if (commentPath) {
        const comment = comments.find((c) => c.id === Number(commentPath[1]));
        if (!comment) return send(404, { message: 'Not Found' });
        comment.body = String(b.body);
        return send(200, comment);
      }
      if (method === 'POST' && /^\/repos\/[^/]+\/[^/]+\/issues$/.test(path)) {
        const number = nextId++;
        issues.set(`#${number}`, { title: String(b.title), status: 'open' });
        return send(201, { number, html_url: `https://github.example.test/acme/shop/issues/${number}`, title: b.title, state: 'open' });
      }
      const issuePath = match('GET', /^\/repos\/[^/]+\/[^/]+\/issues\/(\d+)$/);
      if (issuePath) {
        const issue = issues.get(`#${issuePath[1]}`);
        if (!issue) return send(404, { message: 'Not Found' });
        return send(200, {
          number: Number(issuePath[1]),
          html_url: `https://github.example.test/acme/shop/issues/${issuePath[1]}`,
          title: issue.title,
          state: issue.status,
        });
      }

      // GitLab
      if (method === 'POST' && /^\/api\/v4\/projects\/[^/]+\/statuses\/[^/]+$/.test(path)) return send(201, { id: nextId++, ...b });
      if (method === 'GET' && /^\/api\/v4\/projects\/[^/]+\/repository\/commits\/[^/]+\/merge_requests$/.test(path)) {
        return send(200, [{ iid: MERGE_REQUEST_IID, state: 'opened' }]);
      }
      if (path.endsWith(`/merge_requests/${MERGE_REQUEST_IID}/notes`)) {
        if (method === 'GET') return send(200, comments);
        if (method === 'POST') {
          const note = { id: nextId++, body: String(b.body) };
          comments.push(note);
          return send(201, note);
        }
      }
      const notePath = match('PUT', new RegExp(`/merge_requests/${MERGE_REQUEST_IID}/notes/(\\d+)$`));
      if (notePath) {
        const note = comments.find((c) => c.id === Number(notePath[1]));
        if (!note) return send(404, { message: '404 Not found' });
        note.body = String(b.body);
        return send(200, note);
      }

      // Jira
      if (method === 'POST' && /^\/rest\/api\/[23]\/issue$/.test(path)) {
        const key = `SHOP-${issues.size + 1}`;
        const fields = b.fields as { summary: string };
        issues.set(key, { title: fields.summary, status: 'To Do' });
        return send(201, { id: String(nextId++), key, self: `${url.origin}/rest/api/3/issue/${key}` });
      }
      const jiraIssuePath = match('GET', /^\/rest\/api\/[23]\/issue\/([A-Z]+-\d+)$/);
      if (jiraIssuePath) {
        const issue = issues.get(jiraIssuePath[1] as string);
        if (!issue) return send(404, { errorMessages: ['Issue does not exist'] });
        return send(200, { key: jiraIssuePath[1], fields: { summary: issue.title, status: { name: issue.status } } });
      }
      return send(404, { message: `stand-in: no ${method} ${path}` });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    checkRuns,
    comments,
    issues,
    failNext(n, status = 500) {
      failures = { n, status };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
