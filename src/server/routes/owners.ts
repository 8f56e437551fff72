import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { findArtifact } from '../db/repositories/artifacts.ts';
import { projectOfJob } from '../db/repositories/jobs.ts';
import { findProjectId } from '../db/repositories/projects.ts';
import { projectOfRun } from '../db/repositories/runs.ts';
import { projectOfTest } from '../db/repositories/tests.ts';
import { invalid } from '../errors.ts';
import { isUuid } from '../validation.ts';
import { rawField, rawValue, uuidPathParam } from './route.ts';

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
  return findProjectId(ctx.db, value);
}

/** `{projectId}` in the path: the project owns itself; an unknown id resolves to nothing (404). */
export async function pathProject(ctx: AppContext, request: FastifyRequest): Promise<string | undefined> {
  const id = rawField(request.params, 'projectId');
  return id === undefined ? undefined : findProjectId(ctx.db, id);
}

/** `{projectId}` in the path, which must be a UUID (a 400 otherwise, before any query). */
export async function uuidPathProject(ctx: AppContext, request: FastifyRequest): Promise<string | undefined> {
  return findProjectId(ctx.db, uuidPathParam(request, 'projectId'));
}

/** `{testId}` in the path → its project. */
export const testOwner = (ctx: AppContext, request: FastifyRequest) => projectOfTest(ctx.db, uuidPathParam(request, 'testId'));

/** `{jobId}` in the path → its project. */
export const jobOwner = (ctx: AppContext, request: FastifyRequest) => projectOfJob(ctx.db, uuidPathParam(request, 'jobId'));

/** `{testRunId}` in the path → its project. */
export const runOwner = (ctx: AppContext, request: FastifyRequest) => projectOfRun(ctx.db, uuidPathParam(request, 'testRunId'));

/** `{artifactId}` in the path → its project. */
export const artifactOwner = async (ctx: AppContext, request: FastifyRequest) =>
  (await findArtifact(ctx.db, uuidPathParam(request, 'artifactId')))?.project_id;
