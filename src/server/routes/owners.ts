import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { findArtifact } from '../db/repositories/artifacts.ts';
import { projectOfJob } from '../db/repositories/jobs.ts';
import { findProjectId, findProjectIdByKey } from '../db/repositories/projects.ts';
import { projectOfRun } from '../db/repositories/runs.ts';
import { projectOfTest } from '../db/repositories/tests.ts';
import { invalid } from '../errors.ts';
import type { OwnerKind } from '../http/kept-answers.ts';
import { isUuid } from '../validation.ts';
import { rawField, rawValue, uuidPathParam } from './route.ts';

const PROJECT_KEY_REF = /^[A-Za-z][A-Za-z0-9]{1,15}$/;

// Owner resolvers for project-scoped routes (see RouteImpl.owner): they run before validation on
// the raw request and answer which project owns the addressed resource, or undefined (404).
//
// What the database answered is kept (PERF-7): a run, test, job or artifact never moves to another
// project and a project's id and key never change, so an answer stays true until a deletion, and
// every deletion forgets them all (`forgetKeptContent`, `deleteArtifact`). A "no" is never kept.
// The owner only says which project's access the caller needs; the handler still reads the resource.

/** `lookup(id)` as kept (PERF-7): the protocol is the keeper's (`KeptOwners.through`). */
function kept(
  ctx: AppContext,
  kind: OwnerKind,
  id: string,
  lookup: (id: string) => Promise<string | undefined>,
): string | Promise<string | undefined> {
  return ctx.owners.through(kind, id, lookup);
}

const projectById = (ctx: AppContext, id: string) => kept(ctx, 'project', id, (projectId) => findProjectId(ctx.db, projectId));

/**
 * A project reference: its id, or its short key in any case (SPEC-2.1). Undefined when the value is
 * neither; an unknown id or key resolves to nothing. Both answers are a 404 to the caller.
 */
function projectByRef(ctx: AppContext, ref: string): string | Promise<string | undefined> | undefined {
  if (isUuid(ref)) return projectById(ctx, ref);
  // Keys are created upper-case (the contract's key pattern), so upper-casing makes the comparison case-insensitive.
  if (PROJECT_KEY_REF.test(ref)) return kept(ctx, 'key', ref.toUpperCase(), (key) => findProjectIdByKey(ctx.db, key));
  return undefined;
}

/**
 * The project a request names in a field of its body or query (creations and lists). A missing or
 * malformed field is a 400 naming it, since that reveals nothing about any project; an unknown
 * project resolves to nothing (404). A query (`?projectId=` of a list) takes the project's short
 * key too, in any case, as paths do (JOB-4); a body takes the id only: it is stored, echoed and
 * fingerprinted for idempotent retries as given (docs/decisions.md).
 */
export function namedProject(
  ctx: AppContext,
  source: unknown,
  part: 'body' | 'query',
  field = 'projectId',
): string | Promise<string | undefined> | undefined {
  const value = rawValue(source, field);
  if (value === undefined) throw invalid(`/${part}/${field}`, 'is required');
  if (part === 'query') {
    const project = typeof value === 'string' ? projectByRef(ctx, value) : undefined;
    if (project === undefined) throw invalid(`/${part}/${field}`, "must be one project's id (a UUID) or short key");
    return project;
  }
  if (typeof value !== 'string' || !isUuid(value))
    throw invalid(`/${part}/${field}`, 'must be one project id (a UUID); GET /projects?key= finds the id of a key');
  return projectById(ctx, value);
}

/**
 * The project of a run list: `?projectId=` (id or key), or else the project of `?jobId=`, so a
 * job's runs are listed by the job alone (JOB-4). A job that does not exist, or of a project the
 * caller cannot see, answers 404 as `GET /testmgmt/jobs/{jobId}` does.
 */
export function listedRunsProject(ctx: AppContext, request: FastifyRequest): string | Promise<string | undefined> | undefined {
  if (rawValue(request.query, 'projectId') !== undefined || rawValue(request.query, 'jobId') === undefined) {
    return namedProject(ctx, request.query, 'query');
  }
  const jobId = rawField(request.query, 'jobId');
  if (jobId === undefined || !isUuid(jobId)) throw invalid('/query/jobId', 'must be a UUID');
  return kept(ctx, 'job', jobId, (id) => projectOfJob(ctx.db, id));
}

/**
 * `{projectId}` in the path: the project's id or its short key in any case (SPEC-2.1); the project
 * owns itself. An unknown id or key, or a value that is neither, names no project (404, before any
 * body check), so a non-member gets the same 404 for a project that exists as for one that does not.
 */
export function pathProject(ctx: AppContext, request: FastifyRequest): string | Promise<string | undefined> | undefined {
  const ref = rawField(request.params, 'projectId');
  return ref === undefined ? undefined : projectByRef(ctx, ref);
}

/** `{testId}` in the path → its project. */
export const testOwner = (ctx: AppContext, request: FastifyRequest) =>
  kept(ctx, 'test', uuidPathParam(request, 'testId'), (id) => projectOfTest(ctx.db, id));

/** `{jobId}` in the path → its project. */
export const jobOwner = (ctx: AppContext, request: FastifyRequest) =>
  kept(ctx, 'job', uuidPathParam(request, 'jobId'), (id) => projectOfJob(ctx.db, id));

/** `{testRunId}` in the path → its project. */
export const runOwner = (ctx: AppContext, request: FastifyRequest) =>
  kept(ctx, 'run', uuidPathParam(request, 'testRunId'), (id) => projectOfRun(ctx.db, id));

/** `{artifactId}` in the path → its project. */
export const artifactOwner = (ctx: AppContext, request: FastifyRequest) =>
  kept(ctx, 'artifact', uuidPathParam(request, 'artifactId'), async (id) => (await findArtifact(ctx.db, id))?.project_id);
