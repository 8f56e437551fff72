import { type LightboxItem, screenshotItems } from './artifacts.tsx';
import type { ArtifactDetails, StepTree } from './steps.ts';

/** A run's artifacts as the page shows them. */
export interface RunEvidence {
  /** Beside their steps. */
  byStep: Map<string, ArtifactDetails[]>;
  /** The run's own, and any whose step is not in the tree. */
  runLevel: ArtifactDetails[];
  /** What the lightbox walks through. */
  screenshots: LightboxItem[];
}

const LAST = Number.MAX_SAFE_INTEGER;

/** Sorts a run's artifacts to their steps, and lists its screenshots for the lightbox. */
export function groupEvidence(artifacts: ArtifactDetails[], tree: StepTree): RunEvidence {
  const byStep = new Map<string, ArtifactDetails[]>();
  const runLevel: ArtifactDetails[] = [];
  for (const artifact of artifacts) {
    if (artifact.stepId && tree.byId.has(artifact.stepId)) {
      const list = byStep.get(artifact.stepId) ?? [];
      list.push(artifact);
      byStep.set(artifact.stepId, list);
    } else runLevel.push(artifact);
  }
  // The lightbox walks the screenshots in the order the page shows them: by step, then the run's own.
  const place = (artifact: ArtifactDetails) => (artifact.stepId ? (tree.byId.get(artifact.stepId)?.index ?? LAST) : LAST);
  const ordered = [...artifacts].sort((a, b) => place(a) - place(b));
  const screenshots = screenshotItems(ordered, (artifact) => {
    const step = artifact.stepId ? tree.byId.get(artifact.stepId) : undefined;
    return step ? `${step.step.title}: ${artifact.name}` : artifact.name;
  });
  return { byStep, runLevel, screenshots };
}
