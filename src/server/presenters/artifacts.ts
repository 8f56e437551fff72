import type { Static } from 'typebox';
import type { Artifact, ArtifactDetails, ArtifactImage } from '../../api/v1/artifacts.ts';
import type { ArtifactImageRow, ArtifactsTable } from '../db/types.ts';

export function presentArtifact(row: ArtifactsTable): Static<typeof Artifact> {
  return {
    id: row.id,
    projectId: row.project_id,
    testRunId: row.run_id,
    stepId: row.step_id,
    kind: row.kind,
    name: row.name,
    contentType: row.content_type,
    size: Number(row.size),
    sha256: row.sha256,
    idempotencyKey: row.idempotency_key,
    createdAt: row.created_at,
  };
}

export function presentArtifactImage(row: ArtifactImageRow): Static<typeof ArtifactImage> {
  return {
    id: row.id,
    role: row.role,
    contentType: row.content_type as Static<typeof ArtifactImage>['contentType'],
    width: row.width,
    height: row.height,
    size: Number(row.size),
    sha256: row.sha256,
  };
}

export function presentArtifactDetails(row: ArtifactsTable, images: ArtifactImageRow[]): Static<typeof ArtifactDetails> {
  return { ...presentArtifact(row), images: images.map(presentArtifactImage) };
}
