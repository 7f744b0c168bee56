import { randomBytes, randomUUID } from 'node:crypto';
import type { NavigationRecord } from '../../src/flow/navigationRecord.js';
import type { NavigationState } from '../../src/flow/navigationStates.js';

/** A navigation record for repository-level tests: alice, the Report Service, expiring in ten minutes. */
export function navigationFixture(
  status: NavigationState = 'CREATED',
  overrides: Partial<NavigationRecord> = {},
): NavigationRecord {
  const now = new Date();
  return {
    id: randomUUID(),
    recordVersion: 'elicitationNavigation.v1',
    serverId: 'https://broker.test',
    subject: { iss: 'https://idp.test', sub: 'alice' },
    clientId: undefined,
    requestDigest: 'digest',
    tool: 'reports_create',
    targetScheme: 'https',
    targetHost: 'reports.test',
    redirectPolicy: { callback: 'https://broker.test/oauth/callback/reports', done: '/connect/done' },
    purpose: 'create a report',
    provider: 'reports',
    handleDigest: randomBytes(32),
    stateNonceDigest: undefined,
    sessionGeneration: 0,
    lineage: 'mrtr',
    retryGeneration: 0,
    status,
    rowVersion: 1,
    createdAt: now,
    expiresAt: new Date(now.getTime() + 600_000),
    updatedAt: now,
    ...overrides,
  };
}
