import { useLocation } from 'preact-iso';

/** Which job to compare with: a job id, or the latest completed job on a branch. */
export function CompareForm({ jobId, base, baseBranch }: { jobId: string; base?: string; baseBranch?: string }) {
  const { route } = useLocation();
  const submit = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const job = String(form.get('base') ?? '').trim();
    const branch = String(form.get('baseBranch') ?? '').trim();
    const query = job ? `base=${encodeURIComponent(job)}` : branch ? `baseBranch=${encodeURIComponent(branch)}` : '';
    if (query) route(`/jobs/${jobId}/compare?${query}`);
  };
  return (
    <form class="filters" onSubmit={submit} aria-label="Compare with">
      <label>
        Base job id
        <input name="base" type="text" defaultValue={base ?? ''} />
      </label>
      <span class="muted">or</span>
      <label>
        Latest job on branch
        <input name="baseBranch" type="text" defaultValue={baseBranch ?? ''} placeholder="main" />
      </label>
      <button type="submit">Compare</button>
    </form>
  );
}
