import { EventSourceParserStream } from 'eventsource-parser/stream';
import { ApiError, apiFetch, type Problem, type Schemas } from '../../api/client.ts';

export type Citation = Schemas['Message']['citations'][number];

/** One event of a chat answer as `POST /api/chat` streams it (see its route description). */
export type ChatEvent =
  | { event: 'start'; data: { conversation_id: string; message_id: number } }
  | { event: 'delta'; data: { text: string } }
  | { event: 'tool_call'; data: { id: string; name: string; input: unknown } }
  | { event: 'tool_result'; data: { id: string; name: string; output: unknown; error?: string } }
  | { event: 'citation'; data: Citation }
  | {
      event: 'done';
      data: {
        message_id: number;
        usage: { input_tokens: number; output_tokens: number };
        cost: number | null;
        latency_ms: number;
        provider: string;
        model: string;
        degraded?: unknown;
      };
    }
  | { event: 'error'; data: { code: string; message: string } };

/**
 * Sends a chat message and reads its answer as it streams (a POST, so not an EventSource): each
 * event is handed to `onEvent` as it arrives. What the API refuses before the stream starts
 * (404, 400, 502...) rejects with its problem; aborting `signal` stops the answer (the service
 * aborts the model call and stores the answer so far as aborted).
 */
export async function streamChat(
  body: { message: string; conversation_id?: string; agent_id?: string },
  onEvent: (event: ChatEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  const response = await apiFetch('/api/chat', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) {
    const problem = (await response.json().catch(() => undefined)) as Problem | undefined;
    if (problem && typeof problem === 'object' && 'status' in problem)
      throw new ApiError(response.status, problem);
    throw new Error(`the service answered ${response.status}`);
  }
  const events = response.body
    ?.pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream());
  if (!events) return;
  for await (const message of events) {
    let data: unknown;
    try {
      data = JSON.parse(message.data);
    } catch {
      continue;
    }
    onEvent({ event: message.event ?? 'message', data } as ChatEvent);
  }
}
