import { deleteArtifact, getArtifactContent, getArtifacts, listArtifacts, uploadArtifact } from '../../../api/v1/artifacts.ts';
import { getImage } from '../../../api/v1/images.ts';
import { IDS, SCREENSHOT } from './samples.ts';
import { examplesOf } from './types.ts';

const { images: _images, ...SCREENSHOT_ARTIFACT } = SCREENSHOT;

const DEVICE_LOG = {
  id: IDS.logArtifact,
  projectId: IDS.project,
  testRunId: IDS.run,
  stepId: null,
  kind: 'log' as const,
  name: 'logcat.txt',
  contentType: 'text/plain',
  size: 18214,
  sha256: 'b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9',
  idempotencyKey: 'logcat',
  createdAt: '2026-03-02T09:14:09.512Z',
};

/** Evidence and its images. */
export const artifactExamples = [
  examplesOf(uploadArtifact, {
    request: {
      metadata: {
        testRunId: IDS.run,
        stepId: IDS.stepSignIn,
        kind: 'screenshot',
        name: SCREENSHOT.name,
        idempotencyKey: 'step-2-screenshot',
      },
      file: '(the PNG bytes of dashboard-after-sign-in.png, 1080 × 2400 px)',
    },
    responses: { 201: SCREENSHOT, 200: SCREENSHOT },
  }),
  examplesOf(listArtifacts, { responses: { 200: { items: [SCREENSHOT_ARTIFACT, DEVICE_LOG], nextCursor: null } } }),
  examplesOf(getArtifacts, {
    responses: { 200: { items: [SCREENSHOT, { ...DEVICE_LOG, images: [] }], missing: ['0d4c2e8a-6b1f-4a3d-9c5e-7f8a0b2d4e61'] } },
  }),
  examplesOf(getArtifactContent, { responses: {} }),
  examplesOf(deleteArtifact, { responses: {} }),
  examplesOf(getImage, { responses: {} }),
];
