import type { ActivityInput } from '../activity/activity.service.ts';
import type { WorkflowRow } from './workflows.repository.ts';

/** The feed's line for a new workflow: `Workflow “Review PR” created`. */
export const workflowCreated = (workflow: WorkflowRow): ActivityInput => ({
  workspaceId: workflow.workspace_id,
  kind: 'workflow.created',
  subjectType: 'workflow',
  subjectId: workflow.id,
  message: `Workflow “${workflow.name}” created`,
  data: { name: workflow.name, agents: workflow.agents.length },
  actor: workflow.created_by ?? undefined,
});
