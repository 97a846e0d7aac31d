/** Agent states shown by the spec (section 2.5). */
export const AGENT_STATUSES = ['Active', 'Busy', 'Idle', 'Error'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/** Workflow states: the spec's run states plus Draft, the state of a workflow never run. */
export const WORKFLOW_STATUSES = ['Draft', 'Queued', 'Running', 'Paused', 'Completed', 'Failed'] as const;
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number];
