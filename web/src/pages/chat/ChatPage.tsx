import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, type Schemas, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { useListParams } from '../../lib/list-params.ts';
import { Field } from '../../ui/Field.tsx';
import { formatCost, formatDuration, formatTime } from '../../ui/format.ts';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, isNotFound, Loading, ProblemAlert } from '../../ui/states.tsx';
import { type Citation, streamChat } from './chat-stream.ts';

type Message = Schemas['Message'];
type ToolCall = Message['tool_calls'][number];

/** The turn being answered: the user's message and the answer as it streams. */
interface LiveTurn {
  message: string;
  text: string;
  toolCalls: ToolCall[];
  citations: Citation[];
  state: 'streaming' | 'done' | 'stopped' | 'failed';
  error?: string;
  meta?: string;
}

/** A conversation's whole history, page after page (oldest first). */
async function readHistory(id: string) {
  const first = await unwrap(
    api.GET('/api/chat/conversations/{id}', { params: { path: { id }, query: { limit: 200 } } }),
  );
  const messages = [...first.messages];
  let cursor = first.next_cursor;
  for (let page = 0; cursor !== null && page < 25; page += 1) {
    const next = await unwrap(
      api.GET('/api/chat/conversations/{id}', {
        params: { path: { id }, query: { limit: 200, after: cursor } },
      }),
    );
    messages.push(...next.messages);
    cursor = next.next_cursor;
  }
  return { ...first, messages, next_cursor: cursor };
}

const SPEAKER: Record<string, string> = {
  user: 'You',
  assistant: 'Assistant',
  system: 'System',
  tool: 'Tool',
};

function ToolCalls({ calls }: { calls: ToolCall[] }) {
  if (calls.length === 0) return null;
  return (
    <ul className="tool-calls" aria-label="Tool calls">
      {calls.map((call) => (
        <li key={call.id}>
          <details>
            <summary>
              Tool <code>{call.name}</code>
              {call.error ? ` failed: ${call.error}` : call.output === undefined ? ' (running…)' : ''}
            </summary>
            <div className="muted">Input</div>
            <pre>{JSON.stringify(call.input, null, 2)}</pre>
            {call.output !== undefined && (
              <>
                <div className="muted">Output</div>
                <pre>
                  {typeof call.output === 'string' ? call.output : JSON.stringify(call.output, null, 2)}
                </pre>
              </>
            )}
          </details>
        </li>
      ))}
    </ul>
  );
}

function Citations({ citations }: { citations: Citation[] }) {
  if (citations.length === 0) return null;
  return (
    <ol className="citations" aria-label="Sources cited">
      {citations.map((citation) => (
        <li key={citation.index}>
          <details>
            <summary>
              [{citation.index}] {citation.title}{' '}
              <span className="muted">
                — {citation.source}
                {citation.heading_path.length > 0 ? ` › ${citation.heading_path.join(' › ')}` : ''} · score{' '}
                {citation.score.toFixed(3)}
              </span>
            </summary>
            <blockquote>{citation.passage}</blockquote>
          </details>
        </li>
      ))}
    </ol>
  );
}

function MessageView({ message }: { message: Message }) {
  const speaker = SPEAKER[message.role] ?? message.role;
  return (
    <li className={`message ${message.role}`}>
      <article aria-label={`${speaker}, ${formatTime(message.created_at)}`}>
        <div className="message-head">
          <strong>{speaker}</strong> <span className="muted">{formatTime(message.created_at)}</span>
        </div>
        <ToolCalls calls={message.tool_calls} />
        {message.content && <div className="message-text">{message.content}</div>}
        <Citations citations={message.citations} />
        {message.error &&
          (message.error.startsWith('aborted: the client disconnected') ? (
            <div className="muted">Stopped: the answer was ended before it was complete.</div>
          ) : (
            <div className="error-text">{message.error}</div>
          ))}
        {message.role === 'assistant' && message.model && (
          <div className="muted small">
            {message.provider} / {message.model}
            {message.usage ? ` · ${message.usage.input_tokens + message.usage.output_tokens} tokens` : ''} ·{' '}
            {formatCost(message.cost)} · {formatDuration(message.latency_ms)}
          </div>
        )}
      </article>
    </li>
  );
}

function LiveTurnView({ turn }: { turn: LiveTurn }) {
  return (
    <>
      <li className="message user">
        <article aria-label="You, now">
          <div className="message-head">
            <strong>You</strong>
          </div>
          <div className="message-text">{turn.message}</div>
        </article>
      </li>
      <li className="message assistant">
        <article aria-label="Answer" aria-busy={turn.state === 'streaming'}>
          <div className="message-head">
            <strong>Assistant</strong>{' '}
            <span className="muted" role="status">
              {turn.state === 'streaming'
                ? turn.text
                  ? 'Answering…'
                  : 'Thinking…'
                : turn.state === 'stopped'
                  ? 'Stopped'
                  : turn.state === 'failed'
                    ? 'Failed'
                    : 'Answered'}
            </span>
          </div>
          <ToolCalls calls={turn.toolCalls} />
          <div className="message-text" data-testid="live-answer">
            {turn.text}
          </div>
          <Citations citations={turn.citations} />
          {turn.error && <div className="error-text">{turn.error}</div>}
          {turn.meta && <div className="muted small">{turn.meta}</div>}
        </article>
      </li>
    </>
  );
}

function ConversationList({ current }: { current: string | undefined }) {
  const list = useListParams();
  const conversations = useQuery({
    queryKey: ['conversations', list.offset],
    queryFn: () =>
      unwrap(
        api.GET('/api/chat/conversations', { params: { query: { limit: list.limit, offset: list.offset } } }),
      ),
    placeholderData: keepPreviousData,
  });
  return (
    <nav className="chat-list" aria-label="Conversations">
      <div className="spread">
        <h2>Conversations</h2>
        <Link className="button" to="/chat">
          New conversation
        </Link>
      </div>
      <ProblemAlert error={conversations.error} />
      {conversations.isPending && <Loading what="conversations" />}
      {conversations.data && conversations.data.total === 0 && <Empty>No conversations yet.</Empty>}
      {conversations.data && conversations.data.items.length > 0 && (
        <ul className="feed">
          {conversations.data.items.map((conversation) => (
            <li key={conversation.id}>
              <Link
                to={`/chat/${conversation.id}`}
                aria-current={conversation.id === current ? 'page' : undefined}
              >
                {conversation.title || 'Untitled'}
              </Link>
              <div className="muted small">{formatTime(conversation.last_message_at)}</div>
            </li>
          ))}
        </ul>
      )}
      {conversations.data && (
        <Pager
          label="Conversations"
          offset={list.offset}
          limit={list.limit}
          total={conversations.data.total}
          onChange={list.setOffset}
        />
      )}
    </nav>
  );
}

/**
 * Chat: the caller's conversations, one conversation's history, and a message box whose answer
 * streams in token by token, with its tool calls and cited passages, and a Stop button.
 */
export default function ChatPage() {
  const { id } = useParams();
  const { can } = useWorkspace();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [message, setMessage] = useState('');
  const [agentId, setAgentId] = useState('');
  const [turn, setTurn] = useState<LiveTurn>();
  const [sendError, setSendError] = useState<unknown>();
  const controller = useRef<AbortController | undefined>(undefined);
  const endRef = useRef<HTMLDivElement>(null);

  const conversation = useQuery({
    queryKey: ['conversation', id],
    queryFn: () => readHistory(id as string),
    enabled: Boolean(id),
  });
  const agents = useQuery({
    queryKey: ['agents', 'for-chat'],
    queryFn: () => unwrap(api.GET('/api/agents', { params: { query: { limit: 100 } } })),
  });

  // The conversation shown now (the page's own move to a new conversation's address happens
  // once its answer has ended).
  const shown = useRef(id);
  shown.current = id;
  // Another conversation opened: an answer still streaming here is stopped, and no longer shown.
  // biome-ignore lint/correctness/useExhaustiveDependencies: reset when the conversation changes
  useEffect(() => {
    controller.current?.abort();
    setTurn(undefined);
    setSendError(undefined);
  }, [id]);
  useEffect(() => () => controller.current?.abort(), []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: follow the answer as it grows
  useEffect(() => {
    endRef.current?.scrollIntoView?.({ block: 'nearest' });
  }, [turn?.text, conversation.data?.messages.length]);

  const streaming = turn?.state === 'streaming';

  async function send() {
    const text = message.trim();
    if (!text || streaming) return;
    const abort = new AbortController();
    controller.current = abort;
    setSendError(undefined);
    setMessage('');
    setTurn({ message: text, text: '', toolCalls: [], citations: [], state: 'streaming' });
    let conversationId = id;
    let started = false;
    const update = (change: (current: LiveTurn) => LiveTurn) =>
      setTurn((current) => (current ? change(current) : current));
    try {
      await streamChat(
        {
          message: text,
          ...(id ? { conversation_id: id } : {}),
          ...(!id && agentId ? { agent_id: agentId } : {}),
        },
        (event) => {
          switch (event.event) {
            case 'start':
              started = true;
              conversationId = event.data.conversation_id;
              break;
            case 'delta':
              update((current) => ({ ...current, text: current.text + event.data.text }));
              break;
            case 'tool_call':
              update((current) => ({
                ...current,
                toolCalls: [
                  ...current.toolCalls,
                  { id: event.data.id, name: event.data.name, input: event.data.input, output: undefined },
                ],
              }));
              break;
            case 'tool_result':
              update((current) => ({
                ...current,
                toolCalls: current.toolCalls.map((call) =>
                  call.id === event.data.id
                    ? {
                        ...call,
                        output: event.data.output,
                        ...(event.data.error ? { error: event.data.error } : {}),
                      }
                    : call,
                ),
              }));
              break;
            case 'citation':
              update((current) => ({ ...current, citations: [...current.citations, event.data] }));
              break;
            case 'done':
              update((current) => ({
                ...current,
                state: 'done',
                meta: `${event.data.provider} / ${event.data.model} · ${
                  event.data.usage.input_tokens + event.data.usage.output_tokens
                } tokens · ${formatCost(event.data.cost)} · ${formatDuration(event.data.latency_ms)}${
                  event.data.degraded ? ' · answered by the built-in local provider' : ''
                }`,
              }));
              break;
            case 'error':
              update((current) => ({
                ...current,
                state: 'failed',
                error: `${event.data.message} (${event.data.code})`,
              }));
              break;
          }
        },
        abort.signal,
      );
      update((current) => (current.state === 'streaming' ? { ...current, state: 'done' } : current));
    } catch (error) {
      if (!started) {
        // Refused (or stopped) before it started: nothing was stored; the message goes back in the box.
        setTurn(undefined);
        setMessage(text);
        if (!abort.signal.aborted) setSendError(error);
        controller.current = undefined;
        return;
      }
      if (abort.signal.aborted) update((current) => ({ ...current, state: 'stopped' }));
      else {
        update((current) => ({
          ...current,
          state: 'failed',
          error: error instanceof Error ? error.message : String(error),
        }));
      }
    } finally {
      controller.current = undefined;
    }
    // The stored history now holds the turn: show it from there (a stopped answer is stored
    // once the service has seen the connection close).
    if (abort.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 500));
    await queryClient.invalidateQueries({ queryKey: ['conversations'] });
    if (conversationId) {
      // staleTime 0: the history cached before this turn is out of date.
      await queryClient.fetchQuery({
        queryKey: ['conversation', conversationId],
        queryFn: () => readHistory(conversationId as string),
        staleTime: 0,
      });
      // Still on the page it was sent from: a new conversation takes its address.
      const stayed = shown.current === id;
      if (stayed && conversationId !== id) navigate(`/chat/${conversationId}`, { replace: !id });
      // Unless another message is already being answered, the history now shows this turn.
      if (!controller.current) setTurn(undefined);
    }
  }

  const notFound = id && isNotFound(conversation.error);
  const title = id
    ? (conversation.data?.title ?? (notFound ? 'Conversation not found' : 'Conversation'))
    : 'New conversation';
  const agentName = (agentId && agents.data?.items.find((agent) => agent.id === agentId)?.name) || undefined;

  return (
    <>
      <h1>Chat</h1>
      <div className="chat">
        <ConversationList current={id} />
        <section className="chat-main" aria-labelledby="conversation-heading">
          <h2 id="conversation-heading">{title}</h2>
          {conversation.data?.agent_id && (
            <p className="muted">
              With{' '}
              <Link to={`/agents/${conversation.data.agent_id}`}>
                {agents.data?.items.find((agent) => agent.id === conversation.data?.agent_id)?.name ??
                  'its agent'}
              </Link>
            </p>
          )}
          {id && conversation.isPending && <Loading what="the conversation" />}
          {notFound ? (
            <p>
              No conversation of yours with this id exists in this workspace.{' '}
              <Link to="/chat">Start a new one</Link>
            </p>
          ) : (
            <ProblemAlert error={conversation.error} />
          )}
          {!id && !turn && <Empty>Ask something to start a conversation.</Empty>}
          {id && conversation.data && conversation.data.messages.length === 0 && !turn && (
            <Empty>No messages yet.</Empty>
          )}
          <ol className="messages" aria-label="Messages">
            {conversation.data?.messages.map((item) => (
              <MessageView key={item.id} message={item} />
            ))}
            {turn && <LiveTurnView turn={turn} />}
          </ol>
          <div ref={endRef} />
          <ProblemAlert error={sendError} title="The message was not answered" />
          {!notFound &&
            (can('member') ? (
              <form
                className="composer"
                onSubmit={(event) => {
                  event.preventDefault();
                  void send();
                }}
              >
                {!id && (
                  <div className="field">
                    <label htmlFor="chat-agent">Agent</label>
                    <select
                      id="chat-agent"
                      value={agentId}
                      onChange={(event) => setAgentId(event.target.value)}
                      disabled={streaming}
                    >
                      <option value="">None: the workspace’s default model</option>
                      {agents.data?.items.map((agent) => (
                        <option key={agent.id} value={agent.id}>
                          {agent.name}
                        </option>
                      ))}
                    </select>
                  </div>
                )}
                <Field
                  label="Message"
                  operation="sendChatMessage"
                  name="message"
                  error={sendError}
                  hint={`Ctrl+Enter sends.${!id && agentName ? ` You will talk to ${agentName}.` : ''}`}
                >
                  {(props) => (
                    <textarea
                      {...props}
                      value={message}
                      onChange={(event) => setMessage(event.target.value)}
                      onKeyDown={(event) => {
                        if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
                          event.preventDefault();
                          void send();
                        }
                      }}
                    />
                  )}
                </Field>
                <div className="row">
                  <button type="submit" className="primary" disabled={streaming}>
                    Send
                  </button>
                  <button
                    type="button"
                    className="danger"
                    disabled={!streaming}
                    onClick={() => controller.current?.abort()}
                  >
                    Stop
                  </button>
                </div>
              </form>
            ) : (
              <div className="alert info" role="status">
                You can read your conversations; sending messages needs the member role or higher.
              </div>
            ))}
        </section>
      </div>
    </>
  );
}
