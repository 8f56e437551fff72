import { v1 } from '../../src/client/index.ts';
import { useApi } from './data.ts';

/** Where a run or a job sits: its project (named once it has loaded), its job if it has one, then the page itself. */
export function Breadcrumb({ projectId, jobId, here }: { projectId: string; jobId?: string | null; here: string }) {
  const project = useApi((client) => client.call(v1.projects.getProject, { params: { projectId } }), [projectId]);
  return (
    <nav class="crumbs" aria-label="Breadcrumb">
      <a href={`/projects/${project.data?.key ?? projectId}`}>{project.data?.name ?? 'Project'}</a>
      {jobId ? (
        <>
          {' › '}
          <a href={`/jobs/${jobId}`}>Job</a>
        </>
      ) : null}
      {' › '}
      <span aria-current="page">{here}</span>
    </nav>
  );
}
