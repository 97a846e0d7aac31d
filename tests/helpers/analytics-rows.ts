import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { TestApp } from './test-app.ts';

/**
 * Runs, steps and chat rows written straight into their tables with chosen times and
 * figures, so analytics tests can compute what each endpoint must answer by hand.
 */
export interface StepRow {
  agent_id?: string | null;
  agent_name?: string | null;
  provider?: string | null;
  model?: string | null;
  cost?: number;
  tokens_in?: number;
  tokens_out?: number;
  latency_ms?: number | null;
  started_at: string;
  finished_at?: string | null;
}

export interface RunRow {
  status: 'Queued' | 'Running' | 'Completed' | 'Failed' | 'Cancelled' | 'Paused';
  created_at: string;
  workflow_name?: string;
  workflow_id?: string | null;
  cost?: number;
  tokens_in?: number;
  tokens_out?: number;
  duration_ms?: number | null;
  steps?: StepRow[];
}

/** Inserts a run (and its steps) into `workspaceId`; answers its id. */
export async function insertRun(t: TestApp, workspaceId: string, run: RunRow): Promise<string> {
  const id = randomUUID();
  const plan = {
    goal: 'g',
    execution_policy: { mode: 'sequential', error_handling: 'stop', max_retries: 0, timeout_seconds: 900 },
  };
  await t.rows(sql`insert into runs (id, workspace_id, workflow_id, workflow_name, status, plan, agent_ids,
      cost, tokens_in, tokens_out, duration_ms, created_at, lease_owner, lease_expires_at)
    values (${id}, ${workspaceId}, ${run.workflow_id ?? null}, ${run.workflow_name ?? 'wf'}, ${run.status},
      ${JSON.stringify(plan)}::jsonb, '{}'::uuid[], ${run.cost ?? 0}, ${run.tokens_in ?? 0}, ${run.tokens_out ?? 0},
      ${run.duration_ms ?? null}, ${run.created_at}::timestamptz,
      ${run.status === 'Running' ? 'elsewhere' : null},
      ${run.status === 'Running' ? '2999-01-01T00:00:00Z' : null}::timestamptz)`);
  let position = 0;
  for (const step of run.steps ?? []) {
    await t.rows(sql`insert into run_steps (run_id, workspace_id, position, kind, agent_id, agent_name, status,
        provider, model, cost, tokens_in, tokens_out, latency_ms, started_at, finished_at)
      values (${id}, ${workspaceId}, ${position}, ${step.agent_id === null ? 'merge' : 'agent'},
        ${step.agent_id ?? null}, ${step.agent_name ?? null}, ${step.finished_at ? 'Completed' : 'Running'},
        ${step.provider ?? null}, ${step.model ?? null}, ${step.cost ?? 0}, ${step.tokens_in ?? 0},
        ${step.tokens_out ?? 0}, ${step.latency_ms ?? null}, ${step.started_at}::timestamptz,
        ${step.finished_at ?? null}::timestamptz)`);
    position += 1;
  }
  return id;
}

/** Inserts a conversation with messages at the given times. */
export async function insertConversation(
  t: TestApp,
  workspaceId: string,
  createdAt: string,
  messageTimes: string[],
): Promise<void> {
  const id = randomUUID();
  const last = messageTimes.at(-1) ?? createdAt;
  await t.rows(sql`insert into conversations (id, workspace_id, user_id, title, created_at, last_message_at)
    values (${id}, ${workspaceId}, 'someone', 'chat', ${createdAt}::timestamptz, ${last}::timestamptz)`);
  for (const at of messageTimes) {
    await t.rows(sql`insert into messages (conversation_id, workspace_id, role, content, created_at)
      values (${id}, ${workspaceId}, 'user', 'hello', ${at}::timestamptz)`);
  }
}
