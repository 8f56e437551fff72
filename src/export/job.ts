import { type AttestClient, v1 } from '../client/index.ts';
import { planAttachments, planImages, type RunAnswers, readRunAnswers } from './bundle.ts';
import type { RunPart } from './files.ts';
import type { JobAnswer } from './report.ts';

/** A job read the documented way: the job, then each completed run's answers, in a folder of its own. */
export interface JobAnswers {
  job: JobAnswer;
  parts: RunPart[];
}

/** Runs read at once; each is a handful of calls. */
const READ_CONCURRENCY = 4;

/** The ids of a job's completed runs, oldest first (the list is newest first, page by page). */
export async function completedRunsOfJob(client: AttestClient, job: JobAnswer): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.call(v1.runs.listRuns, {
      query: { projectId: job.projectId, jobId: job.id, status: 'completed', ...(cursor ? { cursor } : {}) },
    });
    ids.push(...page.items.map((run) => run.id));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return ids.reverse();
}

/**
 * Reads a job: `GET /testmgmt/jobs/{jobId}`, its completed runs (runs still queued, running or
 * aborted are left out), and each run's answers as a run export reads them (results, artifacts,
 * details, its test). Each run's files go in the folder `<runId>/`.
 */
export async function readJobAnswers(client: AttestClient, jobId: string): Promise<JobAnswers> {
  const job = await client.call(v1.jobs.getJob, { params: { jobId } });
  const ids = await completedRunsOfJob(client, job);
  const answers: RunAnswers[] = new Array(ids.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(READ_CONCURRENCY, ids.length) }, async () => {
      while (next < ids.length) {
        const index = next++;
        answers[index] = await readRunAnswers(client, ids[index]!);
      }
    }),
  );
  const parts = answers.map((read) => ({
    answers: read,
    images: planImages(read),
    attachments: planAttachments(read),
    folder: `${read.run.id}/`,
  }));
  return { job, parts };
}
