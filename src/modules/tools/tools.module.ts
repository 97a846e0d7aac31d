import type { AddressPolicy } from '../../lib/net/address-guard.ts';
import type { Module } from '../../module.ts';
import type { CodegraphService } from '../codegraph/codegraph.service.ts';
import type { CredentialsService } from '../credentials/credentials.service.ts';
import type { RetrievalService } from '../retrieval/retrieval.service.ts';
import { loadToolDefinitions } from './tool-registry.ts';
import { toolsRoutes } from './tools.routes.ts';
import { createToolsService } from './tools.service.ts';

export interface ToolsModuleDependencies {
  credentials: Pick<CredentialsService, 'access' | 'get' | 'getType'>;
  codegraph: Pick<CodegraphService, 'search' | 'listProjects'>;
  addressPolicy(workspaceId: string): Promise<AddressPolicy>;
  /** The search index, for `knowledge_search`. */
  knowledge: Pick<RetrievalService, 'search'>;
}

/** The tool registry: every `tools/*.tool.ts` found at start-up, bound per model turn. */
export async function createToolsModule(deps: ToolsModuleDependencies) {
  const service = createToolsService({ definitions: await loadToolDefinitions(), ...deps });
  return { service, routes: (app) => toolsRoutes(app, { tools: service }) } satisfies Module;
}
