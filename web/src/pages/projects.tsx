import { v1 } from '../../../src/client/index.ts';
import { ErrorBox, Loading, Page } from '../components.tsx';
import { useApi } from '../data.ts';
import { UsageSummary } from '../usage.tsx';

/** The projects the signed-in user can see. */
export function ProjectsPage() {
  const projects = useApi((client) => client.call(v1.projects.listProjects, { query: { limit: 200 } }), []);
  return (
    <Page title="Projects">
      {projects.error ? <ErrorBox error={projects.error} /> : null}
      {projects.data === undefined ? (
        <Loading />
      ) : projects.data.items.length === 0 ? (
        <p class="muted">No project yet, or none you are a member of.</p>
      ) : (
        <ul class="cards">
          {projects.data.items.map((project) => (
            <li key={project.id}>
              <a class="card" href={`/projects/${project.key}`}>
                <span class="card-key">{project.key}</span>
                <span class="card-title">{project.name}</span>
                {project.description ? <span class="muted">{project.description}</span> : null}
                <UsageSummary usage={project.usage} />
              </a>
            </li>
          ))}
        </ul>
      )}
    </Page>
  );
}
