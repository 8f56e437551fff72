import { type Config, loadConfig } from '../config.ts';

/** The configured limits the OpenAPI document states. */
export type DocumentedLimits = Pick<
  Config,
  | 'pageSizeDefault'
  | 'pageSizeMax'
  | 'maxIdsPerBatch'
  | 'bodyLimit'
  | 'bulkBodyLimit'
  | 'maxArtifactBytes'
  | 'maxImageBytes'
  | 'maxImageSide'
  | 'maxImagePixels'
  | 'maxAnimationPixels'
  | 'maxArtifactsPerRun'
  | 'maxImportBytes'
  | 'maxImportExpandedBytes'
  | 'maxImportEntries'
>;

/**
 * The document (committed as docs/openapi.json and served unchanged) states the default
 * configuration: the values `loadConfig` enforces when no variable is set.
 */
export const DEFAULT_LIMITS: DocumentedLimits = loadConfig({});

/** The variables descriptions name, with the limit each sets. */
const VARIABLES: Record<string, keyof DocumentedLimits> = {
  ATTEST_MAX_IDS_PER_BATCH: 'maxIdsPerBatch',
  ATTEST_MAX_IMAGE_BYTES: 'maxImageBytes',
  ATTEST_MAX_ARTIFACT_BYTES: 'maxArtifactBytes',
  ATTEST_MAX_IMAGE_SIDE: 'maxImageSide',
  ATTEST_MAX_IMAGE_PIXELS: 'maxImagePixels',
  ATTEST_MAX_ANIMATION_PIXELS: 'maxAnimationPixels',
  ATTEST_MAX_ARTIFACTS_PER_RUN: 'maxArtifactsPerRun',
  ATTEST_MAX_IMPORT_BYTES: 'maxImportBytes',
  ATTEST_MAX_IMPORT_EXPANDED_BYTES: 'maxImportExpandedBytes',
  ATTEST_MAX_IMPORT_ENTRIES: 'maxImportEntries',
};
const BYTES = new Set<keyof DocumentedLimits>([
  'maxImageBytes',
  'maxArtifactBytes',
  'bodyLimit',
  'bulkBodyLimit',
  'maxImportBytes',
  'maxImportExpandedBytes',
]);

/** `1 MiB`, `25 MiB`, `1 GiB`; exact byte counts otherwise. */
export function describeBytes(bytes: number): string {
  for (const [unit, size] of [
    ['GiB', 1024 ** 3],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size} ${unit}`;
  }
  return `${bytes} bytes`;
}

const describeLimit = (field: keyof DocumentedLimits, limits: DocumentedLimits) =>
  BYTES.has(field) ? describeBytes(limits[field]) : limits[field].toLocaleString('en-US');

/** Follows each configuration variable a description names with the value it has by default: `` `ATTEST_X` (default 100) ``. */
export function withLimits(text: string, limits: DocumentedLimits): string {
  return text.replace(/`(ATTEST_[A-Z_]+)`/g, (whole, variable: string) => {
    const field = VARIABLES[variable];
    return field ? `${whole} (default ${describeLimit(field, limits)})` : whole;
  });
}
