import { createContext } from 'preact';
import { useContext, useState } from 'preact/hooks';
import { type AttestClient, v1 } from '../../../src/client/index.ts';
import { describeError } from '../data.ts';
import { formatBytes } from '../format.ts';
import { ApiImage, useInView } from '../images.tsx';
import { downloadFromApi } from './download.ts';
import type { ArtifactDetails, ArtifactImage } from './steps.ts';

/** The ids `GET /artifact/artifacts` takes in one call. */
const IDS_PER_CALL = 100;

/** Every artifact of a run with its images, in upload order: the list, then the details in batches. */
export async function loadArtifacts(client: AttestClient, projectId: string, testRunId: string): Promise<ArtifactDetails[]> {
  const listed: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId, cursor } });
    for (const artifact of page.items) listed.push(artifact.id);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  const batches: string[][] = [];
  for (let i = 0; i < listed.length; i += IDS_PER_CALL) batches.push(listed.slice(i, i + IDS_PER_CALL));
  const answers = await Promise.all(batches.map((ids) => client.call(v1.artifacts.getArtifacts, { query: { ids: ids.join(',') } })));
  const byId = new Map(answers.flatMap((answer) => answer.items).map((item) => [item.id, item] as const));
  return listed.map((id) => byId.get(id)).filter((item): item is ArtifactDetails => item !== undefined);
}

/** One picture the lightbox can show. */
export interface LightboxItem {
  imageId: string;
  label: string;
  width: number;
  height: number;
}

export interface LightboxApi {
  /** Opens the lightbox on `item` of the run's screenshots, or of the list given. */
  open(imageId: string, items?: LightboxItem[]): void;
}

export const LightboxContext = createContext<LightboxApi>({ open: () => undefined });

function imageOf(artifact: ArtifactDetails, role: ArtifactImage['role']): ArtifactImage | undefined {
  return artifact.images.find((image) => image.role === role);
}

/** The screenshots' lightbox entries, in the order given. */
export function screenshotItems(artifacts: ArtifactDetails[], labelOf: (artifact: ArtifactDetails) => string): LightboxItem[] {
  const items: LightboxItem[] = [];
  for (const artifact of artifacts) {
    if (artifact.kind !== 'screenshot') continue;
    const image = imageOf(artifact, 'screenshot');
    if (image) items.push({ imageId: image.id, label: labelOf(artifact), width: image.width, height: image.height });
  }
  return items;
}

/** A screenshot as a thumbnail button: click or Enter opens it full size. */
export function ScreenshotThumb({ artifact }: { artifact: ArtifactDetails }) {
  const lightbox = useContext(LightboxContext);
  const image = imageOf(artifact, 'screenshot');
  if (!image) return null;
  return (
    <figure class="thumb">
      <button
        type="button"
        class="thumb-button"
        onClick={() => lightbox.open(image.id)}
        aria-label={`Open screenshot ${artifact.name} full size`}
      >
        <ApiImage imageId={image.id} thumbnail alt={`Screenshot ${artifact.name}`} data-testid="screenshot" />
      </button>
      <figcaption title={artifact.name}>{artifact.name}</figcaption>
    </figure>
  );
}

const ROLE_WORDS = { baseline: 'Baseline', actual: 'Actual', diff: 'Diff', screenshot: 'Screenshot' } as const;

/** A visual diff: baseline, actual and diff side by side, and a slider that reveals actual over baseline. */
export function VisualDiff({ artifact }: { artifact: ArtifactDetails }) {
  const lightbox = useContext(LightboxContext);
  const baseline = imageOf(artifact, 'baseline');
  const actual = imageOf(artifact, 'actual');
  const items: LightboxItem[] = artifact.images.map((image) => ({
    imageId: image.id,
    label: `${artifact.name}: ${ROLE_WORDS[image.role]}`,
    width: image.width,
    height: image.height,
  }));
  return (
    <section class="visual-diff" aria-label={`Visual diff ${artifact.name}`}>
      <h4 class="visual-diff-title">
        Visual diff: <span>{artifact.name}</span>
      </h4>
      <div class="diff-sides">
        {artifact.images.map((image) => (
          <figure class={`thumb diff-${image.role}`} key={image.id}>
            <button
              type="button"
              class="thumb-button"
              onClick={() => lightbox.open(image.id, items)}
              aria-label={`Open ${ROLE_WORDS[image.role].toLowerCase()} of ${artifact.name} full size`}
            >
              <ApiImage
                imageId={image.id}
                thumbnail
                alt={`${ROLE_WORDS[image.role]} of ${artifact.name}`}
                data-testid={`diff-${image.role}`}
              />
            </button>
            <figcaption>
              {ROLE_WORDS[image.role]} <span class="muted">{`${image.width}×${image.height}`}</span>
            </figcaption>
          </figure>
        ))}
      </div>
      {baseline && actual ? <DiffCompare artifact={artifact} baseline={baseline} actual={actual} /> : null}
    </section>
  );
}

/** The actual image laid over the baseline, with a slider for how much of the actual shows. */
function DiffCompare({ artifact, baseline, actual }: { artifact: ArtifactDetails; baseline: ArtifactImage; actual: ArtifactImage }) {
  const [reveal, setReveal] = useState(50);
  const [ref, inView] = useInView<HTMLDivElement>();
  const sliderId = `diff-slider-${artifact.id}`;
  return (
    <div class="diff-compare-wrap" ref={ref} style={{ maxWidth: `${Math.max(baseline.width, actual.width, 320)}px` }}>
      <div
        class="diff-compare"
        style={{ maxWidth: `${Math.max(baseline.width, actual.width)}px`, aspectRatio: `${baseline.width} / ${baseline.height}` }}
      >
        <ApiImage imageId={baseline.id} eager={inView} alt={`Baseline of ${artifact.name}`} class="diff-under" />
        <div class="diff-reveal" data-testid="diff-reveal" style={{ width: `${reveal}%` }}>
          <ApiImage imageId={actual.id} eager={inView} alt={`Actual of ${artifact.name}`} class="diff-over" />
        </div>
        <div class="diff-handle" aria-hidden="true" style={{ left: `${reveal}%` }} />
        <span class="diff-tag diff-tag-actual" aria-hidden="true">
          Actual
        </span>
        <span class="diff-tag diff-tag-baseline" aria-hidden="true">
          Baseline
        </span>
      </div>
      <label class="diff-slider-label" for={sliderId}>
        <span>Actual shown over baseline: {reveal}%</span>
        <input
          id={sliderId}
          type="range"
          min={0}
          max={100}
          step={1}
          value={reveal}
          data-testid="diff-slider"
          aria-label={`Reveal actual over baseline for ${artifact.name}`}
          aria-valuetext={`${reveal}% actual`}
          onInput={(event) => setReveal(Number((event.currentTarget as HTMLInputElement).value))}
        />
      </label>
    </div>
  );
}

/** Any other artifact: its name, kind and size, and a download that sends the session key. */
export function FileArtifact({ artifact }: { artifact: ArtifactDetails }) {
  const [state, setState] = useState<{ busy: boolean; error?: string }>({ busy: false });
  const download = async () => {
    setState({ busy: true });
    try {
      await downloadFromApi(`/artifact/artifacts/${encodeURIComponent(artifact.id)}/content`, artifact.name);
      setState({ busy: false });
    } catch (error) {
      setState({ busy: false, error: describeError(error as Error) });
    }
  };
  return (
    <div class="file-artifact">
      <span class={`kind kind-${artifact.kind}`}>{artifact.kind}</span>
      <button
        type="button"
        class="secondary"
        onClick={download}
        disabled={state.busy}
        aria-label={`Download ${artifact.kind} ${artifact.name}`}
      >
        {state.busy ? 'Downloading…' : `⤓ ${artifact.name}`}
      </button>
      <span class="muted">{formatBytes(artifact.size)}</span>
      {state.error ? (
        <span class="error" role="alert">
          {state.error}
        </span>
      ) : null}
    </div>
  );
}

/** The evidence of one step (or of the run): screenshots as a strip, diffs, then files. */
export function ArtifactGroup({ artifacts }: { artifacts: ArtifactDetails[] }) {
  if (artifacts.length === 0) return null;
  const shots = artifacts.filter((a) => a.kind === 'screenshot');
  const diffs = artifacts.filter((a) => a.kind === 'visual-diff');
  const files = artifacts.filter((a) => a.kind !== 'screenshot' && a.kind !== 'visual-diff');
  return (
    <div class="artifacts">
      {shots.length > 0 ? (
        <div class="thumbs">
          {shots.map((a) => (
            <ScreenshotThumb key={a.id} artifact={a} />
          ))}
        </div>
      ) : null}
      {diffs.map((a) => (
        <VisualDiff key={a.id} artifact={a} />
      ))}
      {files.length > 0 ? (
        <div class="files">
          {files.map((a) => (
            <FileArtifact key={a.id} artifact={a} />
          ))}
        </div>
      ) : null}
    </div>
  );
}
