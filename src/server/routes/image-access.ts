import type { AppContext } from '../context.ts';
import { findVisibleImage } from '../db/repositories/artifacts.ts';
import type { ImagesTable, VisibleProjects } from '../db/types.ts';
import type { ImageUses } from '../http/kept-answers.ts';

// The owner resolver of `GET /images/{imageId}` (see owners.ts for the others): images are shared
// by content, so the owner is any project the caller can see that uses the image.

/** A project among `uses` that the caller can see; undefined when none is. */
function visibleUse(uses: ReadonlySet<string>, visible: VisibleProjects): string | undefined {
  for (const project of uses) if (visible === 'all' || visible.has(project)) return project;
  return undefined;
}

/** An image and a project the caller can see that uses it: what the access check of `GET /images/{imageId}` learns. */
export interface VisibleImage {
  image: ImagesTable;
  projectId: string;
}

/**
 * The access check of `GET /images/{imageId}` (PERF-6): the image with a project the caller can see
 * that uses it. An image is shared by content, so the projects using it only grow with uploads and
 * shrink with deletions. What the database answered is kept as a fact ("project P uses this
 * image"): a caller who sees one of the known projects is answered from memory, synchronously
 * (`keptVisibleImage`; undefined there means "ask", not 404). Anyone else asks the database
 * (`learnVisibleImage`; undefined there is the 404), and what it finds is added, so an upload into
 * a new project is seen by the very next request without forgetting anything. A "no" is never
 * kept. Every deletion of runs, artifacts or projects forgets every kept use (the `runs-deleted`
 * and `artifact-deleted` changes), and a read that overlapped one is not kept.
 */
export function keptVisibleImage(ctx: AppContext, imageId: string, visible: VisibleProjects): VisibleImage | undefined {
  const known = ctx.imageUses.get(imageId);
  if (!known) return undefined;
  const projectId = visibleUse(known.projects, visible);
  return projectId === undefined ? undefined : { image: known.image, projectId };
}

/** Asks the database, when `keptVisibleImage` did not know, and keeps what it finds. */
export async function learnVisibleImage(ctx: AppContext, imageId: string, visible: VisibleProjects): Promise<VisibleImage | undefined> {
  const found = await ctx.imageUses.learn(imageId, (id) => findVisibleImage(ctx.db, id, visible), imageId, usesWith);
  if (!found) return undefined;
  const { project_id, ...image } = found;
  return { image, projectId: project_id };
}

/** What is known of an image's uses, with the use just found added. */
function usesWith({ project_id, ...image }: ImagesTable & { project_id: string }, known: ImageUses | undefined): ImageUses {
  return { image, projects: new Set([...(known?.projects ?? []), project_id]) };
}
