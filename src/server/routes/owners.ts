import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { findArtifact } from '../db/repositories/artifacts.ts';
import { projectOfJob } from '../db/repositories/jobs.ts';
import { findProjectId, findProjectIdByKey } from '../db/repositories/projects.ts';
import { projectOfRun } from '../db/repositories/runs.ts';
import { projectOfTest } from '../db/repositories/tests.ts';
import { invalid } from '../errors.ts';
import { isUuid } from '../validation.ts';
import { rawField, rawValue, uuidPathParam } from './route.ts';

const PROJECT_KEY_REF = /^[A-Za-z][A-Za-z0-9]{1,15}$/;

// Owner resolvers for project-scoped routes (see RouteImpl.owner): they run before validation on
// the raw request and answer which project owns the addressed resource, or undefined (404).

/**
 * The project a request names in a field of its body or query (creations and lists). A missing or
 * malformed field is a 400 naming it, since that reveals nothing about any project; an unknown
 * project resolves to nothing (404). Unlike paths, these fields take the id only: it is stored,
 * echoed and fingerprinted for idempotent retries as given (docs/decisions.md).
 */
export async function namedProject(
  ctx: AppContext,
  source: unknown,
  part: 'body' | 'query',
  field = 'projectId',
): Promise<string | undefined> {
  const value = rawValue(source, field);
  if (value === undefined) throw invalid(`/${part}/${field}`, 'is required');
  if (typeof value !== 'string' || !isUuid(value))
    throw invalid(`/${part}/${field}`, 'must be one project id (a UUID); GET /projects?key= finds the id of a key');
  return findProjectId(ctx.db, value);
}

/**
 * `{projectId}` in the path: the project's id or its short key in any case (SPEC-2.1); the project
 * owns itself. An unknown id or key, or a value that is neither, names no project (404, before any
 * body check), so a non-member gets the same 404 for a project that exists as for one that does not.
 */
export async function pathProject(ctx: AppContext, request: FastifyRequest): Promise<string | undefined> {
  const ref = rawField(request.params, 'projectId');
  if (ref !== undefined && isUuid(ref)) return findProjectId(ctx.db, ref);
  // Keys are created upper-case (the contract's key pattern), so upper-casing makes the comparison case-insensitive.
  if (ref !== undefined && PROJECT_KEY_REF.test(ref)) return findProjectIdByKey(ctx.db, ref.toUpperCase());
  return undefined;
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
