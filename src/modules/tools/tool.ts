import type { Static, TObject } from 'typebox';
import type { FetchFunction } from '../../lib/net/guarded-fetch.ts';
import type { CodegraphService } from '../codegraph/codegraph.service.ts';
import type { AccessPurpose, CredentialsService } from '../credentials/credentials.service.ts';
import type { SearchInput, SearchResponse } from '../retrieval/retrieval.service.ts';

/**
 * What a tool may use of the platform: vault access (every decrypted read is audited under
 * the tool's own `service_name`), a `fetch` that passes the outbound address guard with the
 * workspace's policy, the code graph's search and the knowledge search. Each takes the
 * context's workspace, so a tool never reaches another workspace's data.
 */
export interface ToolServices {
  credentials: Pick<CredentialsService, 'access' | 'get' | 'getType'>;
  fetch: FetchFunction;
  /** Search over the workspace's indexed documents, as the user the work is for. */
  knowledge: { search(input: SearchInput, signal: AbortSignal): Promise<SearchResponse> };
  codegraph: Pick<CodegraphService, 'search' | 'listProjects'>;
}

/** Who a tool call is for and what bounds it. */
export interface ToolContext<Config> {
  workspaceId: string;
  /** The user the work is for: vault accesses are audited in their name. */
  userId: string;
  /** The agent and the run or chat conversation the call is part of, named in vault access records. */
  usedBy: AccessPurpose;
  /** Aborted when the turn is aborted (client disconnect, run cancel or timeout). */
  signal: AbortSignal;
  /** The agent's configuration of this tool (`ToolRef.config`), validated against `config`. */
  config: Config;
  services: ToolServices;
}

/**
 * One tool a model may call. A file `tools/<name with dashes>.tool.ts` whose default export is
 * a `ToolDefinition` is all it takes: the registry finds it at start-up.
 */
export interface ToolDefinition<Input extends TObject = TObject, Config extends TObject = TObject> {
  /** What the model calls it: lower-case letters, digits and underscores. */
  name: string;
  /** What the model reads to decide when to call it. */
  description: string;
  /** The arguments the model sends, as TypeBox (sent to the model as JSON Schema, checked on arrival). */
  input: Input;
  /** What an agent may configure (`tools: [{name, config}]`), checked when the agent is saved. */
  config: Config;
  /**
   * Runs one call. Throw `ToolError` with a message the model may read; anything else reaches
   * the model as a generic failure. The result goes to the model: it must never hold a secret.
   */
  execute(input: Static<Input>, context: ToolContext<Static<Config>>): Promise<unknown>;
}

/** A failure whose message is safe to show the model (and the run's steps): it names no secret. */
export class ToolError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ToolError';
  }
}

/** Types a tool definition's `execute` from its schemas. */
export const defineTool = <Input extends TObject, Config extends TObject>(
  definition: ToolDefinition<Input, Config>,
): ToolDefinition<Input, Config> => definition;
