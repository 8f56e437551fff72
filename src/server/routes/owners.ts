import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { invalid } from '../errors.ts';
import { isUuid } from '../validation.ts';
import { rawValue, uuidPathParam } from './route.ts';

// Owner resolvers for project-scoped routes (see RouteImpl.owner): they run before validation on
// the raw request and answer which project owns the addressed resource, or undefined (404).

/**
 * The project a request names in a field of its body or query (creations and lists). A missing or
 * malformed field is a 400 naming it, since that reveals nothing about any project; an unknown
 * project resolves to nothing (404).
 */
export async function namedProject(
  ctx: AppContext,
  source: unknown,
  part: 'body' | 'query',
  field = 'projectId',
): Promise<string | undefined> {
  const value = rawValue(source, field);
  if (value === undefined) throw invalid(`/${part}/${field}`, 'is required');
  if (typeof value !== 'string' || !isUuid(value)) throw invalid(`/${part}/${field}`, 'must be one project id (a UUID)');
  const row = await ctx.db.selectFrom('projects').select('id').where('id', '=', value).executeTakeFirst();
  return row?.id;
}

/** `{testId}` in the path → its project. */
export async function testOwner(ctx: AppContext, request: FastifyRequest): Promise<string | undefined> {
  const id = uuidPathParam(request, 'testId');
  return (await ctx.db.selectFrom('tests').select('project_id').where('id', '=', id).executeTakeFirst())?.project_id;
}

/** `{jobId}` in the path → its project. */
export async function jobOwner(ctx: AppContext, request: FastifyRequest): Promise<string | undefined> {
  const id = uuidPathParam(request, 'jobId');
  return (await ctx.db.selectFrom('jobs').select('project_id').where('id', '=', id).executeTakeFirst())?.project_id;
}

/** `{testRunId}` in the path → its project. */
export async function runOwner(ctx: AppContext, request: FastifyRequest): Promise<string | undefined> {
  const id = uuidPathParam(request, 'testRunId');
  return (await ctx.db.selectFrom('test_runs').select('project_id').where('id', '=', id).executeTakeFirst())?.project_id;
}
