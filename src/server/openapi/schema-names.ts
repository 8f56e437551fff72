import type { TSchema } from 'typebox';
import { Problem, RoleSchema } from '../../api/common.ts';
import type { Endpoint } from '../../api/endpoint.ts';
import {
  Artifact,
  ArtifactDetails,
  ArtifactImage,
  ArtifactKind,
  ArtifactMetadata,
  getArtifacts,
  ImageRole,
} from '../../api/v1/artifacts.ts';
import { Device } from '../../api/v1/devices.ts';
import { ImportOptions, ImportRecord, ImportStatus } from '../../api/v1/imports.ts';
import { Job, JobProgress, JobStatus } from '../../api/v1/jobs.ts';
import { getOpenApi, Health, LoginBody, LoginResult, Me, Readiness } from '../../api/v1/meta.ts';
import { Member, Project, ProjectUsage } from '../../api/v1/projects.ts';
import {
  AppendResultsBody,
  AppendResultsReply,
  CellInput,
  ResultItems,
  ResultStep,
  RunResults,
  StepInput,
  StepStatus,
  TextCell,
  XrayExecution,
} from '../../api/v1/results.ts';
import { RunStatus, Verdict } from '../../api/v1/run-states.ts';
import { TestRun } from '../../api/v1/runs.ts';
import {
  CreateTestBody,
  SuiteNode,
  SuiteTree,
  TestDefinition,
  TestHistory,
  TestHistoryRun,
  TestHistorySummary,
  TestLink,
  TestStep,
  TestVersion,
  TraceLink,
  TraceTest,
  UpdateTestBody,
} from '../../api/v1/tests.ts';
import { ApiKey, AuditEntry, CreateApiKeyBody, CreatedApiKey, CreateUserBody, User } from '../../api/v1/users.ts';

/**
 * The names of the contract's schemas in the OpenAPI document (`components.schemas`). The runtime
 * schemas stay untouched (no `$id`, so Fastify's schema store is unaffected): the document builder
 * recognises a schema by its JSON and writes a `$ref` to its name. A list answer of a named item
 * becomes `<Item>Page`; a request body or 2xx answer with no name here gets one from its operation
 * (`<OperationId>Request`, `<OperationId>Response`).
 */
export const SCHEMA_NAMES: [TSchema, string][] = [
  [Problem, 'Problem'],
  [RoleSchema, 'Role'],
  [Health, 'Health'],
  [Readiness, 'Readiness'],
  [Me, 'Me'],
  [LoginBody, 'LoginRequest'],
  [LoginResult, 'LoginResult'],
  [getOpenApi.responses[200], 'OpenApiDocument'],
  [User, 'User'],
  [CreateUserBody, 'CreateUserRequest'],
  [ApiKey, 'ApiKey'],
  [CreatedApiKey, 'CreatedApiKey'],
  [CreateApiKeyBody, 'CreateApiKeyRequest'],
  [AuditEntry, 'AuditEntry'],
  [Project, 'Project'],
  [ProjectUsage, 'ProjectUsage'],
  [Member, 'Member'],
  [Device, 'Device'],
  [TestStep, 'TestStep'],
  [TestDefinition, 'Test'],
  [CreateTestBody, 'CreateTestRequest'],
  [UpdateTestBody, 'UpdateTestRequest'],
  [TestLink, 'TestLink'],
  [TestVersion, 'TestVersion'],
  [SuiteNode, 'Suite'],
  [SuiteTree, 'SuiteTree'],
  [TraceTest, 'TraceTest'],
  [TraceLink, 'TraceLink'],
  [TestHistoryRun, 'TestHistoryRun'],
  [TestHistorySummary, 'TestHistorySummary'],
  [TestHistory, 'TestHistory'],
  [JobStatus, 'JobStatus'],
  [JobProgress, 'JobProgress'],
  [Job, 'Job'],
  [RunStatus, 'RunStatus'],
  [Verdict, 'Verdict'],
  [TestRun, 'TestRun'],
  [StepStatus, 'StepStatus'],
  [StepInput, 'StepInput'],
  [CellInput, 'CellInput'],
  [ResultItems, 'ResultItems'],
  [AppendResultsBody, 'AppendResultsRequest'],
  [AppendResultsReply, 'AppendResultsReceipt'],
  [TextCell, 'TextCell'],
  [ResultStep, 'ResultStep'],
  [RunResults, 'RunResults'],
  [XrayExecution, 'XrayExecution'],
  [ArtifactKind, 'ArtifactKind'],
  [ImageRole, 'ImageRole'],
  [ArtifactMetadata, 'ArtifactMetadata'],
  [Artifact, 'Artifact'],
  [ArtifactImage, 'ArtifactImage'],
  [ArtifactDetails, 'ArtifactDetails'],
  [getArtifacts.responses[200], 'ArtifactBatch'],
  [ImportStatus, 'ImportStatus'],
  [ImportOptions, 'ImportOptions'],
  [ImportRecord, 'Import'],
];

const pascal = (operationId: string) => operationId.charAt(0).toUpperCase() + operationId.slice(1);

/** The schema names for one document: the fixed ones, then generated names for unnamed bodies and answers. */
export function schemaNames(endpoints: Endpoint[]): Map<string, string> {
  const byJson = new Map<string, string>();
  const add = (schema: TSchema, name: string) => {
    const key = JSON.stringify(schema);
    if (!byJson.has(key)) byJson.set(key, name);
  };
  for (const [schema, name] of SCHEMA_NAMES) add(schema, name);
  for (const e of endpoints) {
    if (e.body) add(e.body, `${pascal(e.operationId)}Request`);
    for (const [status, spec] of Object.entries(e.responses)) {
      const json = spec !== null && !('content' in spec && 'description' in spec && typeof spec.description === 'string');
      if (json && Number(status) < 300 && !isPage(JSON.parse(JSON.stringify(spec))))
        add(spec as TSchema, `${pascal(e.operationId)}Response`);
    }
  }
  return byJson;
}

type Json = Record<string, unknown>;

/** A `{ items, nextCursor }` list answer. */
export function isPage(node: Json): boolean {
  const props = node.properties as Record<string, Json> | undefined;
  return node.type === 'object' && !!props && Object.keys(props).sort().join() === 'items,nextCursor' && props.items?.type === 'array';
}
