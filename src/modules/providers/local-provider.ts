import type { Citation } from '../../db/schema/chat.ts';
import { estimateTokens } from '../../lib/tokens.ts';
import type { LocalKnowledge, ModelCall, ModelEvent } from './model-gateway.ts';

export { estimateTokens } from '../../lib/tokens.ts';

/** Names the built-in provider in steps, messages and costs. */
export const LOCAL_PROVIDER = { provider: 'local', model: 'echo' } as const;

/** Passages the local provider quotes when it answers from knowledge. */
export const LOCAL_PASSAGES = 3;
/** Characters of each quoted passage; longer ones are cut and say so. */
export const LOCAL_PASSAGE_CHARS = 600;
/** Characters of the message used as the search query (a long paste searches by its start). */
const QUERY_CHARS = 2_000;

/**
 * The provider a workspace has before it configures one: deterministic and free, and it
 * never pretends to be a model. It says plainly that no model is configured, then either
 * quotes the workspace's knowledge for the message (`answerFromKnowledge`, what chat asks
 * for: the best passages, each cited with a `citation` event), or echoes what it would have
 * sent (also when no passage matches), so a new user can run a workflow end to end and see
 * the prompt each agent would get.
 */
export async function* streamLocalTurn(
  request: ModelCall,
  knowledge?: LocalKnowledge,
  /** Why the local provider answers, when a model is configured (its first line); else it says none is. */
  reason?: string,
): AsyncGenerator<ModelEvent> {
  const started = performance.now();
  request.signal.throwIfAborted();
  const last = request.messages.at(-1)?.content ?? '';
  const wanted = request.model
    ? ` (this agent asks for ${request.model.provider}/${request.model.name})`
    : '';
  const notice =
    reason ??
    `[local provider] No model provider is configured for this workspace${wanted}, so no model was called.`;

  const citations =
    request.answerFromKnowledge && knowledge && last.trim() !== ''
      ? await passagesFor(knowledge, request, last)
      : undefined;
  const echo = [
    'It would have sent:',
    ...(request.system ? [`system: ${request.system}`] : []),
    `user: ${last}`,
  ];
  let text: string;
  if (citations === undefined) {
    text = [notice, ...echo].join('\n');
  } else if (citations.length === 0) {
    text = [notice, "Nothing in this workspace's knowledge matches your message.", ...echo].join('\n');
  } else {
    text = [
      `${notice}\nThe passages of this workspace's knowledge that best match your message:`,
      ...citations.map((citation) => {
        const where = [
          citation.title,
          ...citation.heading_path.filter((heading) => heading !== citation.title),
        ];
        return `\n[${citation.index}] ${where.join(' › ')}\n${citation.passage}`;
      }),
    ].join('\n');
  }
  yield { type: 'delta', text };
  for (const citation of citations ?? []) yield { type: 'citation', citation };
  const input = [request.system ?? '', ...request.messages.map((m) => m.content)].join('\n');
  yield {
    type: 'finish',
    text,
    usage: { input_tokens: estimateTokens(input), output_tokens: estimateTokens(text) },
    cost: 0,
    price: null,
    ...LOCAL_PROVIDER,
    latency_ms: Math.round(performance.now() - started),
    fallbacks: [],
  };
}

async function passagesFor(
  knowledge: LocalKnowledge,
  request: ModelCall,
  message: string,
): Promise<Citation[]> {
  const found = await knowledge.search(
    {
      workspaceId: request.workspaceId,
      userId: request.userId,
      query: message.slice(0, QUERY_CHARS),
      top_k: LOCAL_PASSAGES,
    },
    request.signal,
  );
  return found.slice(0, LOCAL_PASSAGES).map((passage, position) => ({
    ...passage,
    index: position + 1,
    passage:
      passage.passage.length > LOCAL_PASSAGE_CHARS
        ? `${passage.passage.slice(0, LOCAL_PASSAGE_CHARS).trimEnd()}…`
        : passage.passage,
  }));
}
