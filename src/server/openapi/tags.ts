/**
 * What each tag of the document (an endpoint's `tag` in the contract) groups, for the document's
 * `tags` list. A tag missing here is listed without a description, which the OpenAPI lint test
 * (Redocly's recommended rules) reports.
 */
export const TAG_DESCRIPTIONS: Readonly<Record<string, string>> = {
  Meta: 'The caller, health and readiness probes, this document, and signing in to the web interface.',
  'API keys': "A user's API keys: created with their secret shown once, listed without it, revoked at once.",
  Users: 'Accounts, their global roles and web-interface passwords, and the audit log (admin).',
  Projects: "Projects, their members, retention, quotas and what they hold; a project's short key works wherever a path takes its id.",
  Devices: 'The device lab: the phones, browsers and machines runs execute on.',
  Tests: 'Test definitions (JSON or Gherkin) with their versions, suites, links, history and quarantine.',
  Jobs: "Executions of tests over devices, and reporters' launches that runs join; their progress and exports.",
  Runners: 'Runners take queued runs under a lease and keep it with heartbeats.',
  Runs: 'Test runs: created, moved through their states, completed with a verdict, kept or deleted.',
  Results: "A run's steps and text cells, and its export in the formats other tools import.",
  Artifacts: 'Evidence attached to runs: screenshots, videos, logs, traces, files and visual diffs.',
  Images: 'The bytes of an image, or its thumbnail.',
  Imports: 'JUnit XML and Playwright reports imported with their attachments, each as a job of completed runs.',
  Failures: 'Failures grouped by cause, their triage, and the rules that sort them into categories.',
  Integrations: "The project's code host (check runs, commit statuses) and issue tracker, and the issues filed from Attest.",
  Triage: "A project's health at a glance, and what changed between two jobs.",
  Webhooks: "Outgoing webhooks, their delivery log, and the events Attest POSTs to them (the document's `webhooks`).",
};
