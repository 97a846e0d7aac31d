import { estimateTokens } from '../../lib/tokens.ts';
import type { ModelEvent, ModelRequest } from './model-gateway.ts';

export { estimateTokens } from '../../lib/tokens.ts';

/** Names the built-in provider in steps, messages and costs. */
export const LOCAL_PROVIDER = { provider: 'local', model: 'echo' } as const;

/**
 * The provider a workspace has before it configures one: deterministic and free. It says
 * plainly that no model is configured and echoes what it would have sent, so a new user
 * can run a workflow end to end and see exactly which prompt each agent would get; it
 * never pretends to be a model.
 */
export async function* streamLocalTurn(request: ModelRequest): AsyncGenerator<ModelEvent> {
  const started = performance.now();
  request.signal.throwIfAborted();
  const last = request.messages.at(-1)?.content ?? '';
  const wanted = request.model
    ? ` (this agent asks for ${request.model.provider}/${request.model.name})`
    : '';
  const text = [
    `[local provider] No model provider is configured for this workspace${wanted}, so no model was called.`,
    'It would have sent:',
    ...(request.system ? [`system: ${request.system}`] : []),
    `user: ${last}`,
  ].join('\n');
  yield { type: 'delta', text };
  const input = [request.system ?? '', ...request.messages.map((m) => m.content)].join('\n');
  yield {
    type: 'finish',
    text,
    usage: { input_tokens: estimateTokens(input), output_tokens: estimateTokens(text) },
    cost: 0,
    ...LOCAL_PROVIDER,
    latency_ms: Math.round(performance.now() - started),
    fallbacks: [],
  };
}
