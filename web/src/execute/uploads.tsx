import { useCallback, useState } from 'preact/hooks';
import { describeError } from '../data.ts';
import { formatBytes } from '../format.ts';
import type { TestRun } from '../run/steps.ts';
import { fingerprint, postWithProgress } from '../upload.ts';
import type { StepState } from './execution.ts';

/** A screenshot on its way to a step: its progress, or why it did not arrive and a way to send it again. */
export interface Upload {
  id: number;
  stepKey: string;
  name: string;
  sent: number;
  total: number;
  error: Error | undefined;
  retry: (() => void) | undefined;
}

let nextId = 1;

/**
 * A pasted image has no name worth keeping ("image.png"): it is named after its step and its bytes,
 * so the same image given again has the same name, which its idempotency key requires.
 */
function nameOf(file: File, step: StepState, print: string): string {
  if (file.name && file.name !== 'image.png') return file.name;
  const extension = file.type.split('/')[1] ?? 'png';
  return `step-${step.index + 1}-${print.slice(0, 8)}.${extension}`;
}

/**
 * Screenshots uploaded the moment they are given, with their progress, as a script would send them
 * (`POST /projects/{projectId}/artifact`, the step's key, an idempotency key from the bytes): a
 * retry, or the same image given again after a reload, is answered with the artifact stored first.
 */
export function useStepUploads(run: TestRun, onStored: () => void) {
  const [uploads, setUploads] = useState<Upload[]>([]);
  const update = (id: number, change: Partial<Upload>) => setUploads((list) => list.map((u) => (u.id === id ? { ...u, ...change } : u)));

  const start = useCallback(
    async (step: StepState, file: File) => {
      const id = nextId++;
      const bytes = await file.arrayBuffer();
      const print = await fingerprint(bytes);
      const name = nameOf(file, step, print);
      const metadata = { testRunId: run.id, stepKey: step.key, kind: 'screenshot', name, idempotencyKey: `${step.key}:shot:${print}` };
      const send = async () => {
        update(id, { error: undefined, retry: undefined, sent: 0 });
        const form = new FormData();
        form.append('metadata', JSON.stringify(metadata));
        form.append('file', new Blob([bytes], { type: file.type }), name);
        try {
          await postWithProgress(`/projects/${encodeURIComponent(run.projectId)}/artifact`, form, (sent, total) =>
            update(id, { sent, total }),
          );
          setUploads((list) => list.filter((u) => u.id !== id));
          onStored();
        } catch (error) {
          update(id, { error: error as Error, retry: send });
        }
      };
      setUploads((list) => [
        ...list,
        { id, stepKey: step.key, name, sent: 0, total: bytes.byteLength, error: undefined, retry: undefined },
      ]);
      await send();
    },
    [run.id, run.projectId, onStored],
  );

  const of = useCallback((stepKey: string) => uploads.filter((u) => u.stepKey === stepKey), [uploads]);
  return { start, of };
}

/** The uploads still on their way, each with a progress bar, or its error and "Try again". */
export function UploadList({ uploads }: { uploads: Upload[] }) {
  if (uploads.length === 0) return null;
  return (
    <ul class="uploads" aria-label="Uploads">
      {uploads.map((upload) => (
        <li key={upload.id}>
          <span>{upload.name}</span>{' '}
          {upload.error ? (
            <span class="error" role="alert">
              Not uploaded: {describeError(upload.error)}{' '}
              <button type="button" class="secondary" onClick={upload.retry}>
                Try again
              </button>
            </span>
          ) : (
            <>
              <progress max={upload.total || 1} value={upload.sent} aria-label={`Uploading ${upload.name}`} />{' '}
              <span class="muted">
                {formatBytes(upload.sent)} of {formatBytes(upload.total)}
              </span>
            </>
          )}
        </li>
      ))}
    </ul>
  );
}
