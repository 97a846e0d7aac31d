import type { PlaybookTrigger } from '../../db/schema/runs.ts';
import type { AgentRow } from '../agents/agents.service.ts';
import type { RunRow } from './runs.repository.ts';

/**
 * What a run's steps ask their models, as text: pure functions of the run (its goal and
 * context), the previous steps' outputs and the playbooks a step triggers. The agent's policy,
 * when it has one, replaces the system text and adds its messages: that is the agent turn's
 * part (`agents/agent-turn.service.ts`), shared with chat.
 */

/** The system text of a merge step, which is no agent's. */
export const MERGE_SYSTEM =
  'You merge the answers of several agents who worked on the same goal in parallel into one answer. Keep what they agree on, resolve conflicts explicitly, and do not invent anything none of them said.';

/** An agent's system text when it has no policy: who it is, then its own system prompt. */
export function systemPrompt(agent: Pick<AgentRow, 'name' | 'role' | 'system_prompt'>): string {
  const identity = `You are ${agent.name}${agent.role ? `, ${agent.role}` : ''}.`;
  return agent.system_prompt ? `${identity}\n\n${agent.system_prompt}` : identity;
}

/** What an agent is asked: the goal, the run's context, and the previous agent's output. */
export function agentPrompt(
  run: Pick<RunRow, 'plan' | 'context'>,
  carry?: string | null,
  previous?: Pick<AgentRow, 'name'>,
): string {
  const parts = [`Goal: ${run.plan.goal}`];
  if (Object.keys(run.context).length > 0) parts.push(`Context:\n${JSON.stringify(run.context, null, 2)}`);
  if (carry) parts.push(`Output of the previous agent${previous ? ` (${previous.name})` : ''}:\n${carry}`);
  return parts.join('\n\n');
}

/** What a merge step is asked: the goal and each parallel agent's answer under its name. */
export function mergePrompt(run: Pick<RunRow, 'plan'>, outputs: { name: string; text: string }[]): string {
  return [`Goal: ${run.plan.goal}`, ...outputs.map((o) => `### ${o.name}\n${o.text}`)].join('\n\n');
}

/** A step's prompt with the texts of the playbooks it triggered before it. */
export function withPlaybooks(prompt: string, triggers: PlaybookTrigger[]): string {
  return triggers.length > 0
    ? `${triggers.map((trigger) => trigger.text).join('\n\n')}\n\n${prompt}`
    : prompt;
}
