import type { ToolRef } from '../../db/schema/agents.ts';
import type { Citation, Usage } from '../../db/schema/chat.ts';
import type { AppliedPrice } from '../../db/schema/settings.ts';
import type { ModelRef } from '../../lib/model-ref.ts';
import type { Component, ComponentHealth } from '../../lifecycle.ts';
import type { AccessPurpose } from '../credentials/credentials.service.ts';

/** One message of the conversation a model sees. */
export interface ModelMessage {
  role: 'user' | 'assistant';
  content: string;
}

/** One model turn: what the run engine and chat ask of the providers. */
export interface ModelRequest {
  /** Whose providers, prices, credentials and default model apply. */
  workspaceId: string;
  /** Who the work is for (vault access is audited in their name). */
  userId: string;
  /** The agent and the run or conversation of the turn: vault access records name them. */
  usedBy?: AccessPurpose;
  /** The agent's model; null or absent means the workspace's default model. */
  model?: ModelRef | null;
  system?: string;
  messages: ModelMessage[];
  /** Tools the model may call, by name and config; bound for the call (`createModelTurns`). */
  tools?: ToolRef[];
  /** Aborts the provider call in flight (client disconnect, cancel, run timeout). */
  signal: AbortSignal;
  /**
   * When no model is configured, the built-in `local` provider answers with the best passages
   * of the workspace's knowledge for the last message, cited, instead of echoing the prompt
   * (chat asks for this; a run step wants to see the prompt it would have sent).
   */
  answerFromKnowledge?: boolean;
}

/** The workspace's knowledge as the local provider reads it: its best passages for a query. */
export interface LocalKnowledge {
  search(
    request: { workspaceId: string; userId: string; query: string; top_k: number },
    signal: AbortSignal,
  ): Promise<Array<Omit<Citation, 'index'>>>;
}

/**
 * A tool bound to one turn's caller (workspace, user, purpose), as the model is shown it and
 * calls it between steps. The tools module's `bind` makes them (its `BoundTool` fits this).
 */
export interface ModelTool {
  name: string;
  description: string;
  /** Plain JSON Schema of the arguments. */
  inputSchema: Record<string, unknown>;
  /** The problems with the model's arguments, empty when they fit. */
  check(input: unknown): string[];
  /** Runs the call; rejects with a message the model may read, or the signal's reason. */
  execute(input: unknown, signal: AbortSignal): Promise<unknown>;
}

/**
 * One model turn as the gateway executes it: the request with its tools already bound, and the
 * knowledge the built-in `local` provider quotes when the request asks it to answer from it.
 */
export interface ModelCall extends Omit<ModelRequest, 'tools'> {
  tools?: ModelTool[];
  knowledge?: LocalKnowledge;
}

/** What a model turn streams, in order; `finish` comes last exactly once. */
export type ModelEvent =
  | { type: 'delta'; text: string }
  | { type: 'tool_call'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; id: string; name: string; output: unknown; error?: string }
  | { type: 'citation'; citation: Citation }
  | {
      type: 'finish';
      /** The whole answer text. */
      text: string;
      usage: Usage;
      /** In the workspace's price units (USD by default) from its per-model prices; 0 when unpriced. */
      cost: number;
      /** The prices `cost` was computed with; null when the model has no price. */
      price: AppliedPrice | null;
      /** The provider and model that answered (after any fallback). */
      provider: string;
      model: string;
      latency_ms: number;
      /** Providers tried before the one that answered, with why each failed. */
      fallbacks: { provider: string; model: string; error: string }[];
      /**
       * Set when the answer is not a model's: the built-in `local` provider answered because
       * every model before it in the chain failed; says which and why.
       */
      degraded?: string;
    };

/** Texts to turn into vectors with one provider's embedding model. */
export interface EmbedRequest {
  /** Whose providers and credentials apply. */
  workspaceId: string;
  /** Who the work is for, when a person asked for it (vault access is audited in their name). */
  userId?: string;
  /** A provider id of the workspace's provider settings (an `openai_compatible` one). */
  provider: string;
  model: string;
  texts: string[];
  signal?: AbortSignal;
}

/**
 * The one way the product talks to language models. It throws `AppError`
 * `provider_error` (502) or `provider_timeout` (504) when every provider of the fallback
 * list failed, and rethrows the signal's reason when aborted.
 */
export interface ModelGateway extends Component {
  stream(call: ModelCall): AsyncIterable<ModelEvent>;
  /**
   * One vector per text, in order, from the provider's embeddings endpoint. Throws `AppError`
   * `provider_error` (502) or `provider_timeout` (504), or `validation_failed` (400) when the
   * provider is not configured or cannot embed; rethrows the signal's reason when aborted.
   */
  embed(request: EmbedRequest): Promise<number[][]>;
  /**
   * One workspace's configured endpoints as last probed by `health()` (which probes every
   * workspace's): nothing about another workspace, so any member may see it.
   */
  workspaceHealth(workspaceId: string): Promise<ComponentHealth>;
}

/** Binds the tools an agent names to the caller of a turn (the tools module's `bind`). */
export interface ToolBinder {
  bind(refs: ToolRef[], scope: { workspaceId: string; userId: string; usedBy?: AccessPurpose }): ModelTool[];
}

/** Model turns as chat and runs ask for them: tools by name, knowledge on request. */
export interface ModelTurns {
  stream(request: ModelRequest): AsyncIterable<ModelEvent>;
}

export interface ModelTurnsDependencies {
  gateway: Pick<ModelGateway, 'stream'>;
  tools: ToolBinder;
  /** What the built-in `local` provider quotes for a request that `answerFromKnowledge`. */
  knowledge?: LocalKnowledge;
}

/**
 * The caller's side of the gateway: binds a request's tools to its caller (an agent naming an
 * unknown tool is a 400 before any provider is called) and lends the local provider the
 * workspace's knowledge. The gateway itself knows neither tools nor knowledge, so the modules
 * they belong to can be built on the gateway (the search index embeds through it).
 */
export function createModelTurns(deps: ModelTurnsDependencies): ModelTurns {
  return {
    async *stream(request) {
      request.signal.throwIfAborted();
      const { tools: refs, ...rest } = request;
      const tools = refs?.length
        ? deps.tools.bind(refs, {
            workspaceId: request.workspaceId,
            userId: request.userId,
            ...(request.usedBy ? { usedBy: request.usedBy } : {}),
          })
        : [];
      yield* deps.gateway.stream({
        ...rest,
        ...(tools.length > 0 ? { tools } : {}),
        ...(deps.knowledge ? { knowledge: deps.knowledge } : {}),
      });
    },
  };
}

/** Runs a turn to the end and returns its `finish` event, with every tool call and result. */
export async function completeTurn(gateway: ModelTurns, request: ModelRequest) {
  const toolCalls: Extract<ModelEvent, { type: 'tool_call' | 'tool_result' }>[] = [];
  for await (const event of gateway.stream(request)) {
    if (event.type === 'tool_call' || event.type === 'tool_result') toolCalls.push(event);
    if (event.type === 'finish') return { ...event, toolEvents: toolCalls };
  }
  throw new Error('the model stream ended without a finish event');
}
