import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { detectCi } from '../../packages/playwright-reporter/src/ci.ts';
import { resolveSettings } from '../../packages/playwright-reporter/src/options.ts';

// The CI variables the live reporter and `attest import` read (packages/playwright-reporter/src/ci.ts),
// with the values each vendor documents, and the order of precedence: option, ATTEST_* variable, CI.

describe('CI detection', () => {
  test('outside CI there is nothing to detect', () => {
    assert.equal(detectCi({ PATH: '/usr/bin', CI: 'true' }), undefined);
  });

  test('GitHub Actions: the pull request branch, the run number, and the run page (with its attempt)', () => {
    const env = {
      GITHUB_ACTIONS: 'true',
      GITHUB_SERVER_URL: 'https://github.com',
      GITHUB_REPOSITORY: 'acme/shop',
      GITHUB_RUN_ID: '9912',
      GITHUB_RUN_NUMBER: '451',
      GITHUB_RUN_ATTEMPT: '2',
      GITHUB_REF_NAME: '17/merge',
      GITHUB_HEAD_REF: 'feature/badge',
      GITHUB_SHA: 'abc123',
    };
    assert.deepEqual(detectCi(env), {
      system: 'GitHub Actions',
      branch: 'feature/badge',
      commit: 'abc123',
      build: '451',
      ciUrl: 'https://github.com/acme/shop/actions/runs/9912/attempts/2',
    });
    assert.equal(detectCi({ ...env, GITHUB_HEAD_REF: '' })?.branch, '17/merge');
  });

  test('GitLab CI', () => {
    assert.deepEqual(
      detectCi({
        GITLAB_CI: 'true',
        CI_COMMIT_REF_NAME: 'main',
        CI_COMMIT_SHA: 'def456',
        CI_PIPELINE_IID: '88',
        CI_PIPELINE_ID: '123456',
        CI_JOB_URL: 'https://gitlab.example.com/acme/shop/-/jobs/777',
      }),
      { system: 'GitLab CI', branch: 'main', commit: 'def456', build: '88', ciUrl: 'https://gitlab.example.com/acme/shop/-/jobs/777' },
    );
  });

  test('Jenkins: GIT_BRANCH without its remote', () => {
    assert.deepEqual(
      detectCi({
        JENKINS_URL: 'https://ci.example.com/',
        GIT_BRANCH: 'origin/release/2.0',
        GIT_COMMIT: '0f0f',
        BUILD_NUMBER: '1042',
        BUILD_URL: 'https://ci.example.com/job/shop/1042/',
      }),
      { system: 'Jenkins', branch: 'release/2.0', commit: '0f0f', build: '1042', ciUrl: 'https://ci.example.com/job/shop/1042/' },
    );
  });

  test('CircleCI', () => {
    assert.deepEqual(
      detectCi({
        CIRCLECI: 'true',
        CIRCLE_BRANCH: 'main',
        CIRCLE_SHA1: 'aa11',
        CIRCLE_BUILD_NUM: '31',
        CIRCLE_BUILD_URL: 'https://circleci.com/gh/acme/shop/31',
      }),
      { system: 'CircleCI', branch: 'main', commit: 'aa11', build: '31', ciUrl: 'https://circleci.com/gh/acme/shop/31' },
    );
  });

  test('Azure Pipelines: the branch without refs/heads/, the results page built from the collection', () => {
    assert.deepEqual(
      detectCi({
        TF_BUILD: 'True',
        BUILD_SOURCEBRANCH: 'refs/heads/main',
        BUILD_SOURCEVERSION: 'bb22',
        BUILD_BUILDNUMBER: '20261127.3',
        BUILD_BUILDID: '812',
        SYSTEM_COLLECTIONURI: 'https://dev.azure.com/acme/',
        SYSTEM_TEAMPROJECT: 'Shop Web',
      }),
      {
        system: 'Azure Pipelines',
        branch: 'main',
        commit: 'bb22',
        build: '20261127.3',
        ciUrl: 'https://dev.azure.com/acme/Shop%20Web/_build/results?buildId=812',
      },
    );
  });

  test('Buildkite: the build page with the job', () => {
    assert.deepEqual(
      detectCi({
        BUILDKITE: 'true',
        BUILDKITE_BRANCH: 'main',
        BUILDKITE_COMMIT: 'cc33',
        BUILDKITE_BUILD_NUMBER: '5',
        BUILDKITE_BUILD_URL: 'https://buildkite.com/acme/shop/builds/5',
        BUILDKITE_JOB_ID: 'e44f',
      }),
      { system: 'Buildkite', branch: 'main', commit: 'cc33', build: '5', ciUrl: 'https://buildkite.com/acme/shop/builds/5#e44f' },
    );
  });

  test('a link Attest would refuse (not http(s), not printable ASCII) is left out', () => {
    assert.equal(detectCi({ JENKINS_URL: 'x', BUILD_URL: 'file:///etc/passwd' })?.ciUrl, undefined);
    assert.equal(detectCi({ JENKINS_URL: 'x', BUILD_URL: 'https://ci.example.com/job/é/' })?.ciUrl, undefined);
  });

  test('the reporter: an option wins over ATTEST_* variables, which win over the CI system', () => {
    const env = {
      ATTEST_URL: 'https://attest.example.com',
      ATTEST_API_KEY: 'atk_x',
      ATTEST_PROJECT: 'WEB',
      ATTEST_COMMIT: 'from-attest-variable',
      CIRCLECI: 'true',
      CIRCLE_BRANCH: 'ci-branch',
      CIRCLE_SHA1: 'ci-commit',
      CIRCLE_BUILD_NUM: '31',
      CIRCLE_BUILD_URL: 'https://circleci.com/gh/acme/shop/31',
    };
    const settings = resolveSettings({ build: 'from-option' }, env);
    assert.ok(!('off' in settings));
    assert.deepEqual(settings.labels, {
      branch: 'ci-branch',
      commit: 'from-attest-variable',
      build: 'from-option',
      ciUrl: 'https://circleci.com/gh/acme/shop/31',
    });
    assert.equal(settings.ci, 'CircleCI');
  });
  test("a pull request's target branch, from each system that names it, sent with the job only (TRIAGE-16)", () => {
    const github = { GITHUB_ACTIONS: 'true', GITHUB_HEAD_REF: 'fix/pay', GITHUB_BASE_REF: 'main' };
    assert.equal(detectCi(github)?.targetBranch, 'main');
    assert.equal(detectCi({ ...github, GITHUB_BASE_REF: '' })?.targetBranch, undefined, 'a push build names none');
    assert.equal(
      detectCi({ GITLAB_CI: 'true', CI_MERGE_REQUEST_TARGET_BRANCH_NAME: 'develop', CI_COMMIT_REF_NAME: 'fix/pay' })?.targetBranch,
      'develop',
    );
    assert.equal(detectCi({ JENKINS_URL: 'x', CHANGE_TARGET: 'origin/main' })?.targetBranch, 'main');
    assert.equal(detectCi({ TF_BUILD: 'True', SYSTEM_PULLREQUEST_TARGETBRANCH: 'refs/heads/release' })?.targetBranch, 'release');
    assert.equal(
      detectCi({ BUILDKITE: 'true', BUILDKITE_PULL_REQUEST: '42', BUILDKITE_PULL_REQUEST_BASE_BRANCH: 'main' })?.targetBranch,
      'main',
    );
    assert.equal(
      detectCi({ BUILDKITE: 'true', BUILDKITE_PULL_REQUEST: 'false', BUILDKITE_PULL_REQUEST_BASE_BRANCH: '' })?.targetBranch,
      undefined,
    );
    const env = { ATTEST_URL: 'https://attest.example.com', ATTEST_API_KEY: 'atk_x', ATTEST_PROJECT: 'WEB', ...github };
    const settings = resolveSettings({}, env);
    assert.ok(!('off' in settings));
    assert.equal(settings.targetBranch, 'main');
    assert.equal('targetBranch' in settings.labels, false, 'runs carry no target branch');
    const overridden = resolveSettings({}, { ...env, ATTEST_TARGET_BRANCH: 'release' });
    assert.ok(!('off' in overridden));
    assert.equal(overridden.targetBranch, 'release');
  });
});
