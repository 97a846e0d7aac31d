import { estimateTokens } from '../../lib/tokens.ts';

/** Tokens of earlier messages a chat turn carries, unless the service is told otherwise. */
export const DEFAULT_HISTORY_TOKEN_BUDGET = 8_000;

/** An earlier message as memory sees it. */
export interface RememberedMessage {
  role: 'user' | 'assistant';
  content: string;
}

/**
 * The earlier messages that go into the next model call: the most recent ones whose estimated
 * tokens (`estimateTokens`, about four characters a token) fit in `budget` together, oldest
 * dropped first, in conversation order. A message that does not fit ends the selection (a
 * shorter, older one is not taken past it, so the model never sees a conversation with a hole
 * in it); empty messages (an answer that failed before any text) are left out, and so is an
 * answer whose question was dropped: memory starts with a user message, as providers expect
 * (Anthropic refuses a conversation that opens with the assistant). `history` is oldest first.
 */
export function selectMemory(history: RememberedMessage[], budget: number): RememberedMessage[] {
  const kept: RememberedMessage[] = [];
  let used = 0;
  for (let index = history.length - 1; index >= 0; index -= 1) {
    const message = history[index] as RememberedMessage;
    if (message.content === '') continue;
    const cost = estimateTokens(message.content);
    if (used + cost > budget) break;
    used += cost;
    kept.push(message);
  }
  while (kept.at(-1)?.role === 'assistant') kept.pop();
  return kept.reverse();
}
