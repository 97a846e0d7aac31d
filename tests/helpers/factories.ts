import type { Actor, TestApp } from './test-app.ts';

let counter = 0;

/** Creates an agent through the API; any field can be overridden. */
export async function buildAgent(t: TestApp, actor: Actor, overrides: Record<string, unknown> = {}) {
  counter += 1;
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/agents',
    headers: actor.headers,
    payload: { name: `Agent ${counter}`, model: { provider: 'openai', name: 'gpt-4o-mini' }, ...overrides },
  });
  if (response.statusCode !== 201) throw new Error(`buildAgent: ${response.statusCode} ${response.body}`);
  return response.json() as { id: string; name: string; [key: string]: unknown };
}

/** Creates a workflow through the API; any field can be overridden. */
export async function buildWorkflow(t: TestApp, actor: Actor, overrides: Record<string, unknown> = {}) {
  counter += 1;
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/workflows',
    headers: actor.headers,
    payload: { name: `Workflow ${counter}`, ...overrides },
  });
  if (response.statusCode !== 201) throw new Error(`buildWorkflow: ${response.statusCode} ${response.body}`);
  return response.json() as { id: string; agents: string[]; [key: string]: unknown };
}
