import type { ActivityInput } from '../activity/activity.service.ts';
import type { AgentRow } from './agents.repository.ts';

/** The feed's line for a new agent: `Agent “Researcher” created`. */
export const agentCreated = (agent: AgentRow): ActivityInput => ({
  workspaceId: agent.workspace_id,
  kind: 'agent.created',
  subjectType: 'agent',
  subjectId: agent.id,
  message: `Agent “${agent.name}” created`,
  data: { name: agent.name, model: agent.model },
  actor: agent.created_by ?? undefined,
});
