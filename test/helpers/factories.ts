import { randomBytes } from 'node:crypto';
import type { Role } from '../../src/api/endpoint.ts';
import type { AttestClient } from '../../src/client/index.ts';
import { v1 } from '../../src/client/index.ts';
import type { Dialect } from '../../src/server/db/types.ts';
import { startTestServer, type TestServer } from './server.ts';

export const unique = (prefix = 'x') => `${prefix}${randomBytes(5).toString('hex')}`;

export interface TestUser {
  email: string;
  key: string;
  keyId: string;
  client: AttestClient;
}

/** Creates a user with the given roles (through the API, as the admin) and a standard key. */
export async function createUser(server: TestServer, roles: Role[] = ['tester'], options: { projects?: string[] } = {}): Promise<TestUser> {
  const email = `${unique('user-')}@example.test`;
  await server.admin.client.call(v1.users.createUser, { body: { email, name: `User ${email}`, roles } });
  const created = await server.admin.client.call(v1.users.createApiKey, { params: { email }, body: { name: 'test' } });
  for (const projectId of options.projects ?? []) {
    await server.admin.client.call(v1.projects.addMember, { params: { projectId, email } });
  }
  return { email, key: created.key, keyId: created.id, client: server.client(created.key) };
}

/** Creates a project (as the admin) with a unique key. */
export async function createProject(server: TestServer, name = 'Project') {
  const key = `P${randomBytes(4).toString('hex').toUpperCase()}`;
  return server.admin.client.call(v1.projects.createProject, { body: { key, name } });
}

/** The usual cast of a project-scoped suite: two projects, and members of A (tester, viewer) and of B only (outsider). */
export async function twoProjects(server: TestServer) {
  const projectA = (await createProject(server, 'A')).id;
  const projectB = (await createProject(server, 'B')).id;
  return {
    projectA,
    projectB,
    tester: await createUser(server, ['tester'], { projects: [projectA] }),
    viewer: await createUser(server, ['viewer'], { projects: [projectA] }),
    outsider: await createUser(server, ['tester'], { projects: [projectB] }),
  };
}

/** A fresh server for the dialect with the cast of twoProjects; the suite closes the server. */
export async function serverWithTwoProjects(dialect: Dialect) {
  const server = await startTestServer(dialect);
  return { server, ...(await twoProjects(server)) };
}
export type ServerWithTwoProjects = Awaited<ReturnType<typeof serverWithTwoProjects>>;

/** A fresh server for the dialect with one project (named projectName), a manager and a tester of it; the suite closes the server. */
export async function serverWithManagedProject(dialect: Dialect, projectName: string) {
  const server = await startTestServer(dialect);
  const projectId = (await createProject(server, projectName)).id;
  return {
    server,
    projectId,
    manager: await createUser(server, ['manager'], { projects: [projectId] }),
    tester: await createUser(server, ['tester'], { projects: [projectId] }),
  };
}
export type ServerWithManagedProject = Awaited<ReturnType<typeof serverWithManagedProject>>;

/** A fresh server for the dialect with one project (named projectName) and a tester of it; the suite closes the server. */
export async function serverWithTester(dialect: Dialect, projectName: string) {
  const server = await startTestServer(dialect);
  const project = await createProject(server, projectName);
  return { server, project, tester: await createUser(server, ['tester'], { projects: [project.id] }) };
}
export type ServerWithTester = Awaited<ReturnType<typeof serverWithTester>>;
