import type { FastifyRequest } from 'fastify';
import * as api from '../../../api/v1/tests.ts';
import type { AppContext } from '../../context.ts';
import { AppError, invalid } from '../../errors.ts';
import { presentQuarantine, presentTest, presentTestHistory, presentTestVersion } from '../../presenters/tests.ts';
import { deleteTest } from '../../services/records/deletions.ts';
import { suiteTree, traceLinks } from '../../services/tests/catalogue.ts';
import { checkedSuite } from '../../services/tests/content.ts';
import {
  createTest,
  getTest,
  getTestHistory,
  listTests,
  NEW_TEST_HEALTH,
  testFromGherkin,
  testFromJsonBody,
} from '../../services/tests/tests.ts';
import { getTestVersion, listTestVersions, updateTest } from '../../services/tests/versions.ts';
import { listQuarantines, quarantineTest, quarantineView, releaseQuarantine } from '../../services/triage/health.ts';
import { namedProject, pathProject, testOwner } from '../owners.ts';
import { noContent, pageOf, route } from '../route.ts';

/** Which of its two inputs a create- or edit-test request sends; any other media type is a 415. */
function createTestInput(request: FastifyRequest): 'json' | 'gherkin' {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type === api.GHERKIN_MEDIA_TYPE) return 'gherkin';
  if (type === 'application/json' || type === '') return 'json';
  throw new AppError('UNSUPPORTED_MEDIA_TYPE', `This operation takes application/json or ${api.GHERKIN_MEDIA_TYPE}.`);
}

export function testRoutes(ctx: AppContext) {
  return [
    route(api.createTest, {
      // A Gherkin body is bare text, so its project travels in the query; a JSON body names it inside.
      owner: (request) =>
        createTestInput(request) === 'gherkin' ? namedProject(ctx, request.query, 'query') : namedProject(ctx, request.body, 'body'),
      handler: async (request, reply) => {
        let test: ReturnType<typeof testFromJsonBody>;
        if (createTestInput(request) === 'gherkin') {
          const text = request.body as unknown;
          test = testFromGherkin(typeof text === 'string' ? text : '', '/body', checkedSuite(request.query.suite ?? null, '/query/suite'));
        } else {
          for (const field of ['projectId', 'suite'] as const) {
            if (request.query[field] !== undefined) {
              throw invalid(`/query/${field}`, `is only for a ${api.GHERKIN_MEDIA_TYPE} body; a JSON body gives it inside`);
            }
          }
          test = testFromJsonBody(request.body);
        }
        const row = await createTest(ctx, request.projectId, test, { userId: request.principal.user.id, requestId: request.id });
        reply.code(201);
        return presentTest({ test: row, health: NEW_TEST_HEALTH });
      },
    }),

    route(api.updateTest, {
      owner: (request) => testOwner(ctx, request),
      handler: async (request) => {
        const actor = { userId: request.principal.user.id, requestId: request.id };
        let edit: Parameters<typeof updateTest>[2];
        if (createTestInput(request) === 'gherkin') {
          const text = request.body as unknown;
          edit = {
            kind: 'gherkin',
            text: typeof text === 'string' ? text : '',
            ...(request.query.version ? { version: request.query.version } : {}),
          };
        } else {
          if (request.query.version !== undefined) {
            throw invalid('/query/version', `is only for a ${api.GHERKIN_MEDIA_TYPE} body; a JSON body gives it inside`);
          }
          edit = { kind: 'json', body: request.body };
        }
        return presentTest(await updateTest(ctx, request.params.testId, edit, actor));
      },
    }),

    route(api.listTestVersions, {
      owner: (request) => testOwner(ctx, request),
      handler: async (request) => {
        const page = await listTestVersions(ctx, request.params.testId, pageOf(ctx.config, request.query));
        return { items: page.items.map(({ row, current }) => presentTestVersion(row, current)), nextCursor: page.nextCursor };
      },
    }),

    route(api.getTestVersion, {
      owner: (request) => testOwner(ctx, request),
      handler: async (request) => {
        const { row, current } = await getTestVersion(ctx, request.params.testId, request.params.version);
        return presentTestVersion(row, current);
      },
    }),

    route(api.listSuites, {
      owner: (request) => pathProject(ctx, request),
      handler: async (request) => suiteTree(ctx, request.projectId),
    }),

    route(api.listLinks, {
      owner: (request) => pathProject(ctx, request),
      handler: async (request) => {
        const { kind, q } = request.query;
        return traceLinks(
          ctx,
          request.projectId,
          { ...(kind !== undefined ? { kind } : {}), ...(q !== undefined ? { q } : {}) },
          pageOf(ctx.config, request.query),
        );
      },
    }),

    route(api.listTests, {
      owner: (request) => namedProject(ctx, request.query, 'query'),
      handler: async (request) => {
        const { sort = 'newest', days, health, suite, tag, q, link } = request.query;
        if (days !== undefined && sort !== 'flakyCost') throw invalid('/query/days', 'applies to sort=flakyCost only');
        const filter = {
          sort,
          ...(days !== undefined ? { days } : {}),
          ...(health !== undefined ? { health } : {}),
          ...(suite !== undefined ? { suite: suite === '' ? '' : checkedSuite(suite, '/query/suite') } : {}),
          ...(tag !== undefined ? { tag } : {}),
          ...(q !== undefined ? { q } : {}),
          ...(link !== undefined ? { link } : {}),
        };
        const page = await listTests(ctx, request.projectId, filter, pageOf(ctx.config, request.query));
        return { items: page.items.map(presentTest), nextCursor: page.nextCursor };
      },
    }),

    route(api.getTest, {
      owner: (request) => testOwner(ctx, request),
      handler: async (request) => presentTest(await getTest(ctx, request.params.testId, request.query.branch)),
    }),

    route(api.deleteTest, {
      owner: (request) => testOwner(ctx, request),
      handler: async (request, reply) => {
        const actor = { userId: request.principal.user.id, requestId: request.id };
        await deleteTest(ctx, request.params.testId, { cascade: request.query.cascade === true }, actor);
        return noContent(reply);
      },
    }),

    route(api.getTestHistory, {
      owner: (request) => testOwner(ctx, request),
      handler: async (request) =>
        presentTestHistory(await getTestHistory(ctx, request.params.testId, pageOf(ctx.config, request.query).limit)),
    }),

    route(api.quarantineTest, {
      owner: (request) => testOwner(ctx, request),
      handler: async (request) => {
        const actor = { userId: request.principal.user.id, requestId: request.id };
        const { test, quarantine, state } = await quarantineTest(ctx, request.params.testId, request.body, actor);
        return presentQuarantine(test, quarantineView(quarantine, ctx.clock().toISOString()), state);
      },
    }),

    route(api.releaseTest, {
      owner: (request) => testOwner(ctx, request),
      handler: async (request, reply) => {
        await releaseQuarantine(ctx, request.params.testId, { userId: request.principal.user.id, requestId: request.id });
        return noContent(reply);
      },
    }),

    route(api.listQuarantines, {
      owner: (request) => pathProject(ctx, request),
      handler: async (request) => ({
        items: (await listQuarantines(ctx, request.projectId)).map(({ row, expired, state }) =>
          presentQuarantine(
            { id: row.test_id, name: row.name, full_name: row.full_name },
            { owner: row.owner, reason: row.reason, expiresAt: row.expires_at, expired },
            state,
          ),
        ),
      }),
    }),
  ];
}
