import type { AgentContext, PoliciesService } from '../policies/policies.service.ts';
import type { ModelEvent, ModelMessage, ModelRequest, ModelTurns } from '../providers/providers.service.ts';
import type { AgentRow } from './agents.service.ts';

/** The answer's last event: the text, usage, cost and which model answered. */
export type TurnFinish = Extract<ModelEvent, { type: 'finish' }>;
/** A passage an answer quoted (the built-in provider answering from knowledge). */
export type TurnCitation = Extract<ModelEvent, { type: 'citation' }>['citation'];

/** A tool call the model made during the turn, with what went in and what came out. */
export interface TurnToolCall {
  id: string;
  name: string;
  input: unknown;
  output: unknown;
  error?: string;
}

/** What a turn needs of its agent (none: the workspace's default model, no tools). */
export type TurnAgent = Pick<AgentRow, 'id' | 'model' | 'tools' | 'policy'>;

/** One turn of an agent (or of no agent) for a run step or a chat message. */
export interface AgentTurnRequest {
  workspaceId: string;
  /** Who the turn is for: the policy's assembly, the vault's audit and tools act in their name. */
  userId: string;
  agent?: TurnAgent;
  /** The run or conversation of the turn (the agent's id is added): vault access records name it. */
  usedBy: { runId?: string; conversationId?: string };
  /** The system text when the agent has no policy (a policy's replaces it). */
  system?: string;
  /** Earlier messages (a conversation's memory), after the policy's own and before `prompt`. */
  history?: ModelMessage[];
  /** What the user (or the run's step) asks. */
  prompt: string;
  /** What a policy's sections and experiment read: its conversation, variables and context. */
  facts: { conversationId?: string; variables: Record<string, unknown>; context: Record<string, unknown> };
  /** Passed on to the gateway (chat: the built-in provider quotes the workspace's knowledge). */
  answerFromKnowledge?: boolean;
  signal: AbortSignal;
}

/** A turn under way: its policy's record, and its model events collected as they pass. */
export interface AgentTurn {
  /** What the policy's assembly recorded (policy, version, variant, experiment); none without a policy. */
  readonly policy: AgentContext['record'] | undefined;
  /** The model request the turn sent. */
  readonly request: ModelRequest;
  /**
   * The model's events, to read once; text, tool calls (with their results), citations and the
   * finish are collected below as they pass. Errors are the gateway's (`provider_error`, ...).
   */
  readonly events: AsyncGenerator<ModelEvent, void, undefined>;
  /** The answer's text so far. */
  readonly text: string;
  readonly toolCalls: TurnToolCall[];
  readonly citations: TurnCitation[];
  /** The finish event, once it has passed. */
  readonly finish: TurnFinish | undefined;
  /** Reads the rest of the events and returns the finish; throws when the stream ended without one. */
  complete(): Promise<TurnFinish>;
}

export interface AgentTurnDependencies {
  models: ModelTurns;
  /** Assembles the context of an agent that has a policy (docs/policies.md). */
  policies?: Pick<PoliciesService, 'assembleForAgent'> | undefined;
}

/**
 * One agent turn, shared by a run's step and a chat message: assembles the agent's policy (when
 * it has one and policies are wired), builds the model request (the policy's system text,
 * model, tools and messages, else the agent's own), streams it through the gateway and collects
 * its tool calls, citations, text and finish. The caller decides what to do with the events as
 * they pass (chat forwards them to its client; a run step only waits for the finish).
 */
export async function startAgentTurn(
  deps: AgentTurnDependencies,
  input: AgentTurnRequest,
): Promise<AgentTurn> {
  const { agent } = input;
  // An agent with a policy speaks the policy's assembled context.
  const policy =
    agent?.policy && deps.policies
      ? await deps.policies.assembleForAgent({
          workspaceId: input.workspaceId,
          userId: input.userId,
          policy: agent.policy,
          agentId: agent.id,
          ...(input.facts.conversationId !== undefined ? { conversationId: input.facts.conversationId } : {}),
          variables: input.facts.variables,
          context: input.facts.context,
        })
      : undefined;
  const system = policy ? policy.system : input.system;
  const tools = policy?.tools ?? agent?.tools ?? [];
  const request: ModelRequest = {
    workspaceId: input.workspaceId,
    userId: input.userId,
    usedBy: { ...input.usedBy, ...(agent ? { agentId: agent.id } : {}) },
    model: policy?.model ?? agent?.model ?? null,
    ...(system ? { system } : {}),
    messages: [
      ...(policy?.messages ?? []),
      ...(input.history ?? []),
      { role: 'user', content: input.prompt },
    ],
    ...(tools.length > 0 ? { tools } : {}),
    ...(input.answerFromKnowledge ? { answerFromKnowledge: true } : {}),
    signal: input.signal,
  };

  let text = '';
  const toolCalls: TurnToolCall[] = [];
  const citations: TurnCitation[] = [];
  let finish: TurnFinish | undefined;
  async function* collect(): AsyncGenerator<ModelEvent, void, undefined> {
    for await (const event of deps.models.stream(request)) {
      switch (event.type) {
        case 'delta':
          text += event.text;
          break;
        case 'tool_call':
          toolCalls.push({ id: event.id, name: event.name, input: event.input, output: null });
          break;
        case 'tool_result': {
          const call = toolCalls.find((candidate) => candidate.id === event.id);
          if (call) {
            call.output = event.output;
            if (event.error !== undefined) call.error = event.error;
          }
          break;
        }
        case 'citation':
          citations.push(event.citation);
          break;
        case 'finish':
          finish = event;
          break;
      }
      yield event;
    }
  }
  const events = collect();

  return {
    policy: policy?.record,
    request,
    events,
    get text() {
      return text;
    },
    toolCalls,
    citations,
    get finish() {
      return finish;
    },
    async complete() {
      for await (const _event of events) {
        // collected by `collect`
      }
      if (!finish) throw new Error('the model stream ended without an answer');
      return finish;
    },
  };
}
