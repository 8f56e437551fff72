import type { Static } from 'typebox';
import {
  createFailureGroupIssue,
  createRunIssue,
  deleteForgeSettings,
  deleteIssueTracker,
  type ForgeSettings,
  getForgeSettings,
  getIssueTracker,
  type IssueLink,
  type IssueTracker,
  listIssueLinks,
  putForgeSettings,
  putIssueTracker,
} from '../../../api/v1/integrations.ts';
import { GROUP } from './failures.ts';
import { IDS } from './samples.ts';
import type { OperationExamples } from './types.ts';
import { examplesOf } from './types.ts';

// The example project's integrations: GitHub check runs with a pull-request comment, and Jira.

const FORGE: Static<typeof ForgeSettings> = {
  kind: 'github',
  apiUrl: 'https://api.github.com',
  auth: 'token',
  tokenSet: true,
  appId: null,
  privateKeySet: false,
  installationId: null,
  checkName: 'Attest',
  pullRequestComment: true,
  enabled: true,
  updatedAt: '2026-03-01T08:30:00.000Z',
};

const TRACKER: Static<typeof IssueTracker> = {
  kind: 'jira',
  baseUrl: 'https://acme.atlassian.net',
  apiVersion: 3,
  email: 'qa-bot@example.com',
  tokenSet: true,
  projectKey: 'SHOP',
  issueType: 'Bug',
  repository: null,
  updatedAt: '2026-03-01T08:35:00.000Z',
};

const LINK: Static<typeof IssueLink> = {
  id: '2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d',
  projectId: IDS.project,
  failureGroupId: GROUP.id,
  testRunId: null,
  tracker: 'jira',
  key: 'SHOP-12',
  url: 'https://acme.atlassian.net/browse/SHOP-12',
  title: 'expected:<200> but was:<500> from http://localhost:<port>/api/orders/<n>',
  status: 'In Progress',
  refreshedAt: '2026-03-02T10:00:00.000Z',
  createdAt: '2026-03-02T09:20:00.000Z',
};

export const integrationExamples: [string, OperationExamples][] = [
  examplesOf(getForgeSettings, { responses: { 200: { forge: FORGE } } }),
  examplesOf(putForgeSettings, {
    request: { kind: 'github', token: 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz', pullRequestComment: true },
    responses: { 200: { forge: FORGE } },
  }),
  examplesOf(deleteForgeSettings, { responses: {} }),
  examplesOf(getIssueTracker, { responses: { 200: { tracker: TRACKER } } }),
  examplesOf(putIssueTracker, {
    request: {
      kind: 'jira',
      baseUrl: 'https://acme.atlassian.net',
      email: 'qa-bot@example.com',
      token: 'ATATT3xFfGF0example',
      projectKey: 'SHOP',
    },
    responses: { 200: { tracker: TRACKER } },
  }),
  examplesOf(deleteIssueTracker, { responses: {} }),
  examplesOf(createFailureGroupIssue, {
    request: { note: 'Seen on every nightly since the payment provider update.' },
    responses: { 201: LINK },
  }),
  examplesOf(createRunIssue, {
    request: { title: 'Checkout on Pixel 8 fails to pay' },
    responses: {
      201: {
        ...LINK,
        id: '3b4c5d6e-7f8a-4b9c-8d1e-2f3a4b5c6d7e',
        failureGroupId: null,
        testRunId: IDS.run,
        key: 'SHOP-13',
        url: 'https://acme.atlassian.net/browse/SHOP-13',
        title: 'Checkout on Pixel 8 fails to pay',
        status: 'To Do',
      },
    },
  }),
  examplesOf(listIssueLinks, { responses: { 200: { items: [LINK] } } }),
];
