import { type AttestClient, v1 } from '../../../src/client/index.ts';
import { useApi } from '../data.ts';

/** Who is signed in (`GET /me`): e-mail, effective role, the session key, projects. */
export const useMe = () => useApi((client: AttestClient) => client.call(v1.meta.getMe), []);

/** Whether a role is at least another: viewer < tester < manager < admin. */
export function atLeast(role: string | undefined, wanted: 'viewer' | 'tester' | 'manager' | 'admin'): boolean {
  const order = ['viewer', 'tester', 'manager', 'admin'];
  return role !== undefined && order.indexOf(role) >= order.indexOf(wanted);
}
