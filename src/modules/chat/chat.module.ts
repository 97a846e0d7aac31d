import type { Db } from '../../db/transaction.ts';
import type { Module } from '../../module.ts';
import {
  createModelTurns,
  type LocalKnowledge,
  type ModelGateway,
  type ToolBinder,
} from '../providers/providers.service.ts';
import { chatRoutes } from './chat.routes.ts';
import { type ChatDependencies, createChatService } from './chat.service.ts';

export interface ChatModuleDependencies {
  db: Db;
  /** Model turns go through the gateway with the agent's tools bound for each. */
  gateway: Pick<ModelGateway, 'stream'>;
  tools: ToolBinder;
  /** With no model configured, chat quotes the workspace's best passages (the search index's). */
  knowledge: LocalKnowledge;
  agents: ChatDependencies['agents'];
  policies: NonNullable<ChatDependencies['policies']>;
}

/** Chat: one user's conversations with a model, or with an agent. */
export function createChatModule(deps: ChatModuleDependencies) {
  const service = createChatService({
    db: deps.db,
    gateway: createModelTurns({ gateway: deps.gateway, tools: deps.tools, knowledge: deps.knowledge }),
    agents: deps.agents,
    policies: deps.policies,
  });
  return {
    service,
    routes: (app, { streams }) => chatRoutes(app, { chat: service, streams }),
  } satisfies Module;
}
