// The tables of per-project storage accounting (RET-4, migration 0006).

/** A project's storage counters (RET-4), kept by triggers (migration 0006) in the writing transaction. */
export interface ProjectUsageTable {
  project_id: string;
  runs: number;
  artifacts: number;
  /** Sum of the project's artifact sizes, each upload counted. */
  logical_bytes: number;
  /** Sum of the sizes of the distinct blobs the project's artifacts reference. */
  stored_bytes: number;
}

/** How many references a project holds to one blob; a row exists while there is at least one. */
export interface ProjectBlobsTable {
  project_id: string;
  sha256: string;
  size: number;
  refs: number;
}

export type UsageCounters = Omit<ProjectUsageTable, 'project_id'>;
