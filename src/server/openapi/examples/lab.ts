import { deleteDevice, getDevice, listDevices, registerDevice, updateDevice } from '../../../api/v1/devices.ts';
import {
  addMember,
  createProject,
  deleteProject,
  getProject,
  getProjectUsage,
  listMembers,
  listProjects,
  removeMember,
  updateProject,
} from '../../../api/v1/projects.ts';
import { DEVICE, DEVICE_ID, IDS, IPHONE, PROJECT, TESTER, TESTER_EMAIL } from './samples.ts';
import { examplesOf } from './types.ts';

const MEMBER = { userId: IDS.tester, email: TESTER_EMAIL, name: TESTER.name, addedAt: '2026-01-12T09:02:00.000Z' };

/** Projects and the device lab. */
export const labExamples = [
  examplesOf(listProjects, { responses: { 200: { items: [PROJECT], nextCursor: null } } }),
  examplesOf(createProject, {
    request: { key: PROJECT.key, name: PROJECT.name, description: PROJECT.description },
    responses: {
      201: {
        ...PROJECT,
        updatedAt: PROJECT.createdAt,
        retention: null,
        usage: { runs: 0, artifacts: 0, logicalBytes: 0, storedBytes: 0, quotaBytes: null },
      },
    },
  }),
  examplesOf(getProject, { responses: { 200: PROJECT } }),
  examplesOf(getProjectUsage, { responses: { 200: PROJECT.usage } }),
  examplesOf(updateProject, {
    request: { description: PROJECT.description },
    responses: { 200: PROJECT },
  }),
  examplesOf(deleteProject, { responses: {} }),
  examplesOf(listMembers, {
    responses: {
      200: {
        items: [{ userId: IDS.admin, email: 'admin@example.com', name: 'Lab Admin', addedAt: '2026-01-12T08:30:00.000Z' }, MEMBER],
        nextCursor: null,
      },
    },
  }),
  examplesOf(addMember, { responses: { 200: MEMBER } }),
  examplesOf(removeMember, { responses: {} }),
  examplesOf(listDevices, { responses: { 200: { items: [DEVICE, IPHONE], nextCursor: null } } }),
  examplesOf(registerDevice, {
    request: {
      id: DEVICE_ID,
      name: DEVICE.name,
      platform: 'android',
      osVersion: '14',
      model: 'SM-G991B',
      manufacturer: 'samsung',
      labels: ['android', 'phone', 'lab-2'],
    },
    responses: { 201: { ...DEVICE, lastSeenAt: null, updatedAt: DEVICE.createdAt } },
  }),
  examplesOf(getDevice, { responses: { 200: DEVICE } }),
  examplesOf(updateDevice, {
    request: { status: 'maintenance', labels: ['android', 'phone', 'lab-3'] },
    responses: { 200: { ...DEVICE, status: 'maintenance', labels: ['android', 'phone', 'lab-3'], updatedAt: '2026-03-02T12:00:00.000Z' } },
  }),
  examplesOf(deleteDevice, { responses: {} }),
];
