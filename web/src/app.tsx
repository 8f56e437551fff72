import { useEffect } from 'preact/hooks';
import { ErrorBoundary, LocationProvider, lazy, Route, Router, useLocation } from 'preact-iso';
import { loginPath } from './data.ts';
import { Layout } from './layout.tsx';
import { LoginPage } from './pages/login.tsx';
import { NotFoundPage } from './pages/not-found.tsx';
import { SsoCallbackPage } from './pages/sso-callback.tsx';
import { currentSession } from './session.ts';

// Every page but the login is its own chunk: the login page loads only what it needs.
const ProjectsPage = lazy(() => import('./pages/projects.tsx').then((m) => m.ProjectsPage));
const ProjectPage = lazy(() => import('./pages/project.tsx').then((m) => m.ProjectPage));
const RunPage = lazy(() => import('./pages/run.tsx').then((m) => m.RunPage));
const ExecutePage = lazy(() => import('./pages/execute.tsx').then((m) => m.ExecutePage));
const ImportPage = lazy(() => import('./pages/import.tsx').then((m) => m.ImportPage));
const AuditPage = lazy(() => import('./pages/audit.tsx').then((m) => m.AuditPage));
const AccountPage = lazy(() => import('./pages/account.tsx').then((m) => m.AccountPage));
const JobPage = lazy(() => import('./pages/job.tsx').then((m) => m.JobPage));
const TestPage = lazy(() => import('./pages/test.tsx').then((m) => m.TestPage));
const DevicesPage = lazy(() => import('./pages/devices.tsx').then((m) => m.DevicesPage));
const DevicePage = lazy(() => import('./pages/device.tsx').then((m) => m.DevicePage));
const UsersPage = lazy(() => import('./pages/admin-users.tsx').then((m) => m.UsersPage));
const KeysPage = lazy(() => import('./pages/keys.tsx').then((m) => m.KeysPage));
// The dashboard's and the failures pages' charts (uPlot) load with them only: a chunk of their own.
const DashboardPage = lazy(() => import('./pages/dashboard.tsx').then((m) => m.DashboardPage));
const FailuresPage = lazy(() => import('./pages/failures.tsx').then((m) => m.FailuresPage));
const FailureGroupPage = lazy(() => import('./pages/failure-group.tsx').then((m) => m.FailureGroupPage));
const ComparePage = lazy(() => import('./pages/compare.tsx').then((m) => m.ComparePage));
// Writing, not only reading (UI-7 to UI-9): a project's settings, its tests, launching jobs,
// traceability.
const ProjectSettingsPage = lazy(() => import('./pages/project-settings.tsx').then((m) => m.ProjectSettingsPage));
const TestsPage = lazy(() => import('./pages/tests.tsx').then((m) => m.TestsPage));
const TestEditorPage = lazy(() => import('./pages/test-editor.tsx').then((m) => m.TestEditorPage));
const TraceabilityPage = lazy(() => import('./pages/traceability.tsx').then((m) => m.TraceabilityPage));
const NewJobPage = lazy(() => import('./pages/job-new.tsx').then((m) => m.NewJobPage));
// HOOK-9: a project's outgoing webhooks and their delivery log.
const WebhooksPage = lazy(() => import('./pages/webhooks.tsx').then((m) => m.WebhooksPage));
const WebhookPage = lazy(() => import('./pages/webhooks.tsx').then((m) => m.WebhookPage));

/** A page behind the login: without a session, the login page, with the place asked for. */
function behindLogin<P extends object>(Component: (props: P) => unknown) {
  return function Protected(props: P) {
    const { url, route } = useLocation();
    const session = currentSession();
    useEffect(() => {
      if (!session) route(loginPath(url), true);
    }, [session, url, route]);
    if (!session) return null;
    const Inner = Component as (props: P) => preact.JSX.Element;
    return (
      <Layout>
        <ErrorBoundary>
          <Inner {...props} />
        </ErrorBoundary>
      </Layout>
    );
  };
}

// Wrapped once, so navigating keeps each page's component identity.
const Pages = {
  projects: behindLogin(ProjectsPage),
  project: behindLogin(ProjectPage),
  run: behindLogin(RunPage),
  execute: behindLogin(ExecutePage),
  import: behindLogin(ImportPage),
  audit: behindLogin(AuditPage),
  account: behindLogin(AccountPage),
  job: behindLogin(JobPage),
  test: behindLogin(TestPage),
  devices: behindLogin(DevicesPage),
  device: behindLogin(DevicePage),
  users: behindLogin(UsersPage),
  keys: behindLogin(KeysPage),
  dashboard: behindLogin(DashboardPage),
  failures: behindLogin(FailuresPage),
  failureGroup: behindLogin(FailureGroupPage),
  compare: behindLogin(ComparePage),
  projectSettings: behindLogin(ProjectSettingsPage),
  tests: behindLogin(TestsPage),
  testEditor: behindLogin(TestEditorPage),
  traceability: behindLogin(TraceabilityPage),
  newJob: behindLogin(NewJobPage),
  webhooks: behindLogin(WebhooksPage),
  webhook: behindLogin(WebhookPage),
  notFound: behindLogin(NotFoundPage),
};

export function App() {
  return (
    <LocationProvider>
      <Router>
        <Route path="/login" component={LoginPage} />
        <Route path="/login/sso" component={SsoCallbackPage} />
        <Route path="/" component={Pages.projects} />
        <Route path="/projects" component={Pages.projects} />
        <Route path="/projects/:projectKey" component={Pages.project} />
        <Route path="/projects/:projectKey/dashboard" component={Pages.dashboard} />
        <Route path="/projects/:projectKey/failures" component={Pages.failures} />
        <Route path="/projects/:projectKey/failures/:groupId" component={Pages.failureGroup} />
        <Route path="/projects/:projectKey/settings" component={Pages.projectSettings} />
        <Route path="/projects/:projectKey/webhooks" component={Pages.webhooks} />
        <Route path="/projects/:projectKey/webhooks/:webhookId" component={Pages.webhook} />
        <Route path="/projects/:projectKey/tests" component={Pages.tests} />
        <Route path="/projects/:projectKey/tests/new" component={Pages.testEditor} />
        <Route path="/projects/:projectKey/traceability" component={Pages.traceability} />
        <Route path="/projects/:projectKey/jobs/new" component={Pages.newJob} />
        <Route path="/runs/:testRunId" component={Pages.run} />
        <Route path="/runs/:testRunId/execute" component={Pages.execute} />
        <Route path="/projects/:projectKey/import" component={Pages.import} />
        <Route path="/jobs/:jobId" component={Pages.job} />
        <Route path="/jobs/:jobId/compare" component={Pages.compare} />
        <Route path="/tests/:testId" component={Pages.test} />
        <Route path="/tests/:testId/edit" component={Pages.testEditor} />
        <Route path="/devices" component={Pages.devices} />
        <Route path="/devices/:deviceId" component={Pages.device} />
        <Route path="/admin/users" component={Pages.users} />
        <Route path="/keys" component={Pages.keys} />
        <Route path="/admin/audit" component={Pages.audit} />
        <Route path="/account" component={Pages.account} />
        <Route default component={Pages.notFound} />
      </Router>
    </LocationProvider>
  );
}
