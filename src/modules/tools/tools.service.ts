import type { TSchema } from 'typebox';
import Value from 'typebox/value';
import { type FieldError, infrastructureFailure, invalidFields } from '../../errors.ts';
import type { AddressPolicy } from '../../lib/net/address-guard.ts';
import { createGuardedFetch } from '../../lib/net/guarded-fetch.ts';
import type { CodegraphService } from '../codegraph/codegraph.service.ts';
import type { AccessPurpose, CredentialsService } from '../credentials/credentials.service.ts';
import type { RetrievalService } from '../retrieval/retrieval.service.ts';
import { type ToolDefinition, ToolError } from './tool.ts';

export { ToolError } from './tool.ts';

/** An agent's choice of a tool (`agents.tools[n]`): the tool's name and its configuration. */
export interface ToolRef {
  name: string;
  config?: Record<string, unknown>;
}

export interface ToolsDependencies {
  /** The tools found at start-up (`loadToolDefinitions()`). */
  definitions: ToolDefinition[];
  credentials: Pick<CredentialsService, 'access' | 'get' | 'getType'>;
  /** The code graph, for `code_search`. */
  codegraph: Pick<CodegraphService, 'search' | 'listProjects'>;
  /** The outbound address policy of a workspace (its `refuse_private_networks`, the loopback allowance). */
  addressPolicy(workspaceId: string): Promise<AddressPolicy>;
  /** The search index, which tools reach scoped to the turn's workspace and user. */
  knowledge: Pick<RetrievalService, 'search'>;
}

/** A tool as the API lists it. */
export interface ToolInfo {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  config_schema: Record<string, unknown>;
}

/**
 * A tool ready for one model turn: its schema for the model, a check of the model's
 * arguments, and `execute` bound to the workspace, the user and the agent's config.
 */
export interface BoundTool {
  name: string;
  description: string;
  /** Plain JSON Schema of the arguments, as the model is shown it. */
  inputSchema: Record<string, unknown>;
  /** The problems with the model's arguments, empty when they fit. */
  check(input: unknown): string[];
  /**
   * Runs the call. Rejects with `ToolError` (a message the model may read) for every failure,
   * or with the signal's reason when the turn was aborted.
   */
  execute(input: unknown, signal: AbortSignal): Promise<unknown>;
}

/** JSON Schema without TypeBox's symbol-keyed metadata, as a provider expects it. */
const plainSchema = (schema: TSchema): Record<string, unknown> => JSON.parse(JSON.stringify(schema));

/**
 * Field errors of a tool config: an unknown key is named as its own field (TypeBox reports it
 * twice, once as `additionalProperties` on the object and once as a `false` schema on the key).
 */
function configErrors(schema: TSchema, value: unknown, root: string): FieldError[] {
  return [...Value.Errors(schema, value)].flatMap((error) => {
    const field = `${root}${error.instancePath.replaceAll('/', '.')}`;
    if (error.keyword === 'boolean') return [];
    if (error.keyword === 'additionalProperties') {
      const names = (error.params as { additionalProperties?: string[] }).additionalProperties ?? [];
      return names.map((name) => ({ field: `${field}.${name}`, message: 'is not a setting of this tool' }));
    }
    return [{ field, message: error.message }];
  });
}

const describe = (schema: TSchema, value: unknown): string[] =>
  [...Value.Errors(schema, value)].map((error) => `${error.instancePath || '/'} ${error.message}`);

/**
 * The tool registry: which tools exist, whether an agent's `tools` name them with a valid
 * config, and the tools a model turn may call, bound to who the turn is for.
 */
export function createToolsService(deps: ToolsDependencies) {
  const byName = new Map(deps.definitions.map((definition) => [definition.name, definition]));

  /** Field errors of an agent's `tools` list, under `field` (`body.tools`). */
  function checkRefs(refs: ToolRef[], field: string): FieldError[] {
    return refs.flatMap((ref, index) => {
      if (refs.findIndex((other) => other.name === ref.name) < index) {
        return [{ field: `${field}.${index}.name`, message: `repeats ${ref.name}: a tool is listed once` }];
      }
      const definition = byName.get(ref.name);
      if (!definition) {
        return [
          {
            field: `${field}.${index}.name`,
            message: `is not a known tool (known: ${[...byName.keys()].join(', ') || 'none'})`,
          },
        ];
      }
      return configErrors(definition.config, ref.config ?? {}, `${field}.${index}.config`);
    });
  }

  return {
    checkRefs,

    /**
     * The vault credentials an agent's tools are configured with, per tool name: the ids a
     * tool's `config.credentials` lists (the one config key by which a tool names credentials).
     * Binding one is an admin's act (docs/vault.md, rule C3b), so agents compare these.
     */
    boundCredentials: (refs: ToolRef[]): Map<string, number[]> =>
      new Map(
        refs.flatMap((ref) => {
          const ids = ref.config?.credentials;
          if (!Array.isArray(ids)) return [];
          const numbers = ids.filter((id): id is number => typeof id === 'number');
          return numbers.length > 0 ? [[ref.name, numbers] as const] : [];
        }),
      ),

    /** Every tool, with its argument and config schemas (for clients building agent forms). */
    list: (): ToolInfo[] =>
      [...byName.values()].map((definition) => ({
        name: definition.name,
        description: definition.description,
        input_schema: plainSchema(definition.input),
        config_schema: plainSchema(definition.config),
      })),

    /**
     * The tools of an agent for one turn, bound to the workspace and user. Unknown names or
     * configs that no longer fit are a 400 naming `tools.<n>`: an agent saved before a tool was
     * removed says so instead of silently losing the tool.
     */
    bind(
      refs: ToolRef[],
      scope: { workspaceId: string; userId: string; usedBy?: AccessPurpose },
    ): BoundTool[] {
      const errors = checkRefs(refs, 'tools');
      if (errors.length > 0) throw invalidFields(errors);
      const fetch = createGuardedFetch(() => deps.addressPolicy(scope.workspaceId));
      const caller = { workspaceId: scope.workspaceId, userId: scope.userId };
      const knowledge = {
        search: (input: Parameters<RetrievalService['search']>[1], signal: AbortSignal) =>
          deps.knowledge.search(caller, input, signal),
      };
      return refs.map((ref) => {
        const definition = byName.get(ref.name) as ToolDefinition;
        return {
          name: definition.name,
          description: definition.description,
          inputSchema: plainSchema(definition.input),
          check: (input) => describe(definition.input, input),
          async execute(input, signal) {
            const problems = describe(definition.input, input);
            if (problems.length > 0) throw new ToolError(`invalid arguments: ${problems.join('; ')}`);
            try {
              return await definition.execute(input as never, {
                workspaceId: scope.workspaceId,
                userId: scope.userId,
                usedBy: scope.usedBy ?? {},
                signal,
                config: (ref.config ?? {}) as never,
                services: { credentials: deps.credentials, fetch, knowledge, codegraph: deps.codegraph },
              });
            } catch (error) {
              signal.throwIfAborted();
              // The database away or busy is not the tool's failure: the turn fails with it (503,
              // a run handed back) rather than letting the model answer without the tool.
              const infrastructure = infrastructureFailure(error);
              if (infrastructure) throw infrastructure;
              if (error instanceof ToolError) throw error;
              // Anything unexpected may carry internals: the model learns only that the tool failed.
              throw new ToolError(`${definition.name} failed unexpectedly`, { cause: error });
            }
          },
        };
      });
    },
  };
}

export type ToolsService = ReturnType<typeof createToolsService>;
