import type { FastifyReply, FastifyRequest } from 'fastify';
import type { EXPORT_FORMATS } from '../../api/v1/results.ts';
import { downloadOf, readJobAnswers } from '../../export/index.ts';
import { asCaller, callerClient, callerSources, junitWanted, sendDownload } from './run-export.ts';

/**
 * Answers `GET /testmgmt/jobs/{jobId}/export`: the job and its completed runs read the documented
 * way in process with the caller's own credentials, then ONE report per format for the whole job
 * (retries folded into their test), streamed as the run export is.
 */
export async function sendJobExport(
  request: FastifyRequest,
  reply: FastifyReply,
  jobId: string,
  format: (typeof EXPORT_FORMATS)[number],
  options: { xrayProject?: string },
) {
  const client = callerClient(request);
  const { job, parts } = await asCaller(readJobAnswers(client, jobId));
  const { sources, evidenceRead } = callerSources(client, options.xrayProject);
  const download = downloadOf(format, { job: { job, parts, ...sources } }, junitWanted(request));
  return sendDownload(request, reply, download, `attest-job-${jobId.slice(0, 8)}-${format}`, { jobId, format }, evidenceRead);
}
