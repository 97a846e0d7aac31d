import type { Db } from '../../db/transaction.ts';
import type { Module } from '../../module.ts';
import type { AuditRecorder } from '../audit/audit.service.ts';
import { policiesRoutes } from './policies.routes.ts';
import { createPoliciesService, type PolicyRunData } from './policies.service.ts';

export interface PoliciesModuleDependencies {
  db: Db;
  /** Experiments read their run figures through the runs service. */
  runs: PolicyRunData;
  audit: AuditRecorder;
}

/** Policies: versioned agent context, labels and A/B tests (docs/policies.md). */
export function createPoliciesModule(deps: PoliciesModuleDependencies) {
  const service = createPoliciesService({ db: deps.db, runs: deps.runs, audit: deps.audit });
  return { service, routes: (app) => policiesRoutes(app, { policies: service }) } satisfies Module;
}
