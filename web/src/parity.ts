/**
 * Which page performs each operation of the API (UI-6: the API lets a client do what the web
 * interface does, and the other way round). `test/unit/web-parity.test.ts` reads docs/openapi.json
 * and fails when an operation is missing here, when a page is not a route of app.tsx, when the
 * page's code does not reach the operation (`evidence`, by default `.operationId`, found in
 * web/src), or when an API-only operation has no reason or is not in docs/web.md's list.
 */
export type Reach =
  /** The page (a route of app.tsx) where a person performs the operation, and how. */
  | { page: string; does: string; evidence?: RegExp }
  /** Deliberately without a page, and why. */
  | { apiOnly: string };

const RUNNER =
  'A runner’s protocol (SCALE-6): a program takes a queued run for its device and renews the lease while it runs; a browser tab would hold a lease nobody renews. A person starts a queued run by hand instead (PATCH to running), which takes no lease.';

export const PARITY: Record<string, Reach> = {
  // Meta
  getHealth: { apiOnly: 'For load balancers and orchestrators, which read status codes, not pages.' },
  getReadiness: { apiOnly: 'For load balancers and orchestrators, which read status codes, not pages.' },
  getOpenApi: { apiOnly: 'For tools; people read the same document at /docs/api.' },
  login: { page: '/login', does: 'Sign in' },
  getAuthMethods: { page: '/login', does: 'Which ways in the login page offers: "Sign in with <provider>", the password form' },
  startSsoLogin: { page: '/login', does: 'Sign in with <provider>' },
  finishSsoLogin: { page: '/login/sso', does: 'The page the provider sends the browser back to' },
  getMe: { page: '/projects', does: 'The frame of every page: who is signed in' },

  // Users and keys
  listUsers: { page: '/admin/users', does: 'The users list' },
  getUser: { page: '/admin/users', does: 'A chosen user' },
  createUser: { page: '/admin/users', does: 'Add a user' },
  setUserRoles: { page: '/admin/users', does: 'Save roles' },
  deleteUser: { page: '/admin/users', does: 'Delete user' },
  setUserPassword: { page: '/account', does: 'Change password (your own)' },
  listApiKeys: { page: '/keys', does: 'Your API keys' },
  createApiKey: { page: '/keys', does: 'Create key' },
  revokeApiKey: { page: '/keys', does: 'Revoke' },
  listAuditLog: { page: '/admin/audit', does: 'The audit log, filtered' },

  // Projects
  listProjects: { page: '/projects', does: 'The projects list' },
  createProject: { page: '/projects', does: 'New project' },
  getProject: { page: '/projects/:projectKey', does: 'A project' },
  updateProject: { page: '/projects/:projectKey/settings', does: 'Name, retention and quota forms' },
  deleteProject: { page: '/projects/:projectKey/settings', does: 'Delete project, its key typed' },
  getProjectUsage: { page: '/projects/:projectKey/settings', does: 'Usage' },
  listMembers: { page: '/projects/:projectKey/settings', does: 'Members' },
  addMember: { page: '/projects/:projectKey/settings', does: 'Add member' },
  removeMember: { page: '/projects/:projectKey/settings', does: 'Remove' },

  // Devices
  listDevices: { page: '/devices', does: 'The device lab' },
  getDevice: { page: '/devices/:deviceId', does: 'A device, linked from the lab by its name: Edit, Retire' },
  registerDevice: { page: '/devices', does: 'New device' },
  updateDevice: { page: '/devices', does: 'Edit a device, retire it' },
  deleteDevice: { page: '/devices', does: 'Delete device' },

  // Tests
  listTests: { page: '/projects/:projectKey/tests', does: 'The tests tree, searched' },
  createTest: { page: '/projects/:projectKey/tests/new', does: 'New test: steps or Gherkin' },
  updateTest: { page: '/tests/:testId/edit', does: 'Save test (a new version)' },
  getTest: { page: '/tests/:testId', does: 'A test' },
  listTestVersions: { page: '/tests/:testId', does: 'Its versions' },
  getTestVersion: { page: '/tests/:testId', does: 'One version (?version=), linked from the runs that executed it' },
  listSuites: { page: '/projects/:projectKey/tests', does: 'The suites and their counts' },
  listLinks: { page: '/projects/:projectKey/traceability', does: 'Each link with its tests and their latest verdicts' },
  getTestHistory: { page: '/tests/:testId', does: 'Its history' },
  deleteTest: { page: '/tests/:testId', does: 'Delete test, its runs too (cascade) when it has any' },
  quarantineTest: { page: '/tests/:testId', does: 'Quarantine' },
  releaseTest: { page: '/tests/:testId', does: 'Release' },
  startFixAttempt: { page: '/tests/:testId', does: 'Claim a fix' },
  disableTest: { page: '/tests/:testId', does: 'Disable, with a reason' },
  enableTest: { page: '/tests/:testId', does: 'Enable' },
  listQuarantines: {
    apiOnly:
      'For the Playwright reporter and the CLI, which decide from it whether a failure fails CI. People see quarantines on each test (its health) and on the dashboard.',
  },

  // Jobs
  listJobs: { page: '/projects/:projectKey', does: 'The Jobs tab' },
  createJob: { page: '/projects/:projectKey/jobs/new', does: 'Launch job; Run again on a job' },
  getJob: { page: '/jobs/:jobId', does: 'A job, live' },
  cancelJob: { page: '/jobs/:jobId', does: 'Cancel job' },
  completeJob: { page: '/jobs/:jobId', does: 'Close launch' },
  deleteJob: { page: '/jobs/:jobId', does: 'Delete job, naming its runs' },
  exportJob: { page: '/jobs/:jobId', does: 'Export', evidence: /\/testmgmt\/jobs\/\$\{[^}]+\}\/export/ },

  // Runs
  claimRun: { apiOnly: RUNNER },
  heartbeatRun: { apiOnly: RUNNER },
  createRun: { page: '/runs/:testRunId/execute', does: 'Execute a test by hand: its run' },
  listRuns: { page: '/projects/:projectKey', does: 'The runs list, filtered' },
  getRun: { page: '/runs/:testRunId', does: 'A run' },
  updateRun: { page: '/runs/:testRunId/execute', does: 'Start, Complete run' },
  deleteRun: { page: '/runs/:testRunId', does: 'Delete run' },
  keepRun: { page: '/runs/:testRunId', does: 'Keep' },
  appendResults: { page: '/runs/:testRunId/execute', does: 'Pass, Fail, Blocked, Skip a step' },
  getResults: { page: '/runs/:testRunId', does: 'Its steps' },
  exportRun: { page: '/runs/:testRunId', does: 'Export', evidence: /\/testmgmt\/testruns\/\$\{[^}]+\}\/export/ },

  // Artifacts and images
  getArtifacts: { page: '/runs/:testRunId', does: 'Screenshots beside their steps' },
  listArtifacts: { page: '/runs/:testRunId', does: 'Other artifacts' },
  getArtifactContent: { page: '/runs/:testRunId', does: 'Download', evidence: /\/artifact\/artifacts\/\$\{[^}]+\}\/content/ },
  // Uploads go through XMLHttpRequest for their progress: the evidence is the path they post to.
  uploadArtifact: {
    page: '/runs/:testRunId/execute',
    does: 'Paste, drop or pick a screenshot for a step',
    evidence: /`\/projects\/\$\{[^}]+\}\/artifact`/,
  },
  deleteArtifact: { page: '/runs/:testRunId', does: 'Delete artifact <name>, in the Artifacts list' },
  getImage: { page: '/runs/:testRunId', does: 'Screenshots, thumbnails first', evidence: /`\/images\/\$\{/ },
  getSignedImage: {
    apiOnly:
      'For the people a webhook or chat message reaches, who have no session: its screenshot links are signed for one image and expire. Signed in, pages read the image with their key.',
  },

  // Imports
  importReport: {
    page: '/projects/:projectKey/import',
    does: 'Import results (drop a file)',
    evidence: /\/projects\/\$\{[^}]+\}\/imports\?/,
  },
  getImport: { page: '/projects/:projectKey/import', does: "The import's progress and errors" },
  listImports: { page: '/projects/:projectKey/import', does: 'Earlier imports' },

  // Failures and triage
  listFailureGroups: { page: '/projects/:projectKey/failures', does: 'The error groups' },
  triageFailureGroups: { page: '/projects/:projectKey/failures', does: 'Triage the chosen groups' },
  getFailureGroup: { page: '/projects/:projectKey/failures/:groupId', does: 'An error group' },
  triageFailureGroup: { page: '/projects/:projectKey/failures/:groupId', does: 'Its triage form' },
  getFailureRules: { page: '/projects/:projectKey/settings', does: 'Failure rules' },
  putFailureRules: { page: '/projects/:projectKey/settings', does: 'Save failure rules' },
  getRunFailures: {
    apiOnly:
      "For exporters (JUnit, Allure, Xray carry each failure's defect type): the run page shows the same groups, each read with its details (GET /projects/{projectId}/failures/{groupId}).",
  },

  // Integrations (docs/integrations.md)
  getForgeSettings: { page: '/projects/:projectKey/settings', does: 'Code host' },
  putForgeSettings: { page: '/projects/:projectKey/settings', does: 'Save code host' },
  deleteForgeSettings: { page: '/projects/:projectKey/settings', does: 'Remove code host' },
  getIssueTracker: { page: '/projects/:projectKey/settings', does: 'Issue tracker' },
  putIssueTracker: { page: '/projects/:projectKey/settings', does: 'Save issue tracker' },
  deleteIssueTracker: { page: '/projects/:projectKey/settings', does: 'Remove issue tracker' },
  createFailureGroupIssue: { page: '/projects/:projectKey/failures/:groupId', does: 'Create issue' },
  createRunIssue: { page: '/runs/:testRunId', does: 'Create issue (a failed or broken run)' },
  listIssueLinks: { page: '/projects/:projectKey/failures/:groupId', does: 'Issues, with their title and status' },

  getDashboard: { page: '/projects/:projectKey/dashboard', does: 'The dashboard' },
  getFlakyCost: { page: '/projects/:projectKey/dashboard', does: 'What flakiness cost: the tests and jobs behind it' },
  compareJobs: { page: '/jobs/:jobId/compare', does: 'Two jobs compared' },

  // Webhooks (HOOK-9)
  listWebhooks: { page: '/projects/:projectKey/webhooks', does: 'The webhooks list' },
  createWebhook: { page: '/projects/:projectKey/webhooks', does: 'Add webhook (its secret shown once)' },
  deleteWebhook: { page: '/projects/:projectKey/webhooks', does: 'Delete' },
  updateWebhook: { page: '/projects/:projectKey/webhooks/:webhookId', does: 'Save webhook; Enable and Disable on the list' },
  getWebhook: { page: '/projects/:projectKey/webhooks/:webhookId', does: 'A webhook' },
  listWebhookDeliveries: { page: '/projects/:projectKey/webhooks/:webhookId', does: 'Its deliveries with their attempts' },
  getWebhookDelivery: { page: '/projects/:projectKey/webhooks/:webhookId', does: 'A delivery opened: what each attempt sent and got back' },
  redeliverWebhookDelivery: { page: '/projects/:projectKey/webhooks/:webhookId', does: 'Redeliver' },
  testWebhook: { page: '/projects/:projectKey/webhooks/:webhookId', does: 'Send test event' },
};
