import { Type } from 'typebox';
import { AppError } from '../../../errors.ts';
import { StringEnum } from '../../../lib/typebox.ts';
import { SYMBOL_KINDS } from '../../codegraph/codegraph.service.ts';
import { defineTool, type ToolContext, ToolError } from '../tool.ts';

/** Neighbours (callers, callees) shown per result: enough to follow a call, short for a prompt. */
const NEIGHBOURS_SHOWN = 10;
/** A doc comment longer than this is cut for the model. */
const DOC_CHARS = 600;

const ProjectName = Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$', maxLength: 100 });

const Input = Type.Object(
  {
    query: Type.String({
      minLength: 1,
      maxLength: 200,
      pattern: '\\S',
      description:
        'a symbol name (exact, a prefix, approximate, or Class.method) or words from its signature or doc',
    }),
    project: Type.Optional(
      Type.String({
        maxLength: 100,
        description: 'the code project to search; may be left out when there is only one',
      }),
    ),
    kind: Type.Optional(StringEnum(SYMBOL_KINDS)),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, description: 'results, 5 by default' })),
  },
  { additionalProperties: false },
);

const Config = Type.Object(
  {
    projects: Type.Optional(
      Type.Array(ProjectName, {
        maxItems: 50,
        uniqueItems: true,
        description: 'the code projects this agent may search; every project of the workspace when absent',
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * `code_search`: the model looks up symbols in a code project of its workspace (indexed with
 * `POST /api/codegraph/index`) and gets each one's location, signature, doc comment, callers
 * and callees, so it can follow the code without reading whole files.
 */
export default defineTool({
  name: 'code_search',
  description:
    'Search an indexed code project for functions, classes, methods, interfaces and types by name or by words ' +
    'of their signature or doc comment. Each result gives the file and lines, the signature, the doc comment, ' +
    'the callers and the callees.',
  input: Input,
  config: Config,
  async execute(input, context) {
    const project = await chooseProject(input.project, context);
    try {
      const { project: found, results } = await context.services.codegraph.search(
        { workspaceId: context.workspaceId },
        project,
        { q: input.query, limit: input.limit ?? 5, ...(input.kind ? { kind: input.kind } : {}) },
      );
      const refer = (neighbour: { qualified_name: string | null; file: string; line: number }) =>
        `${neighbour.qualified_name ?? '(top level)'} at ${neighbour.file}:${neighbour.line}`;
      return {
        project: found.name,
        status: found.status,
        results: results.map((hit) => ({
          kind: hit.kind,
          name: hit.qualified_name,
          location: `${hit.file}:${hit.start_line}-${hit.end_line}`,
          signature: hit.signature,
          doc: hit.doc && hit.doc.length > DOC_CHARS ? `${hit.doc.slice(0, DOC_CHARS - 1)}…` : hit.doc,
          match: hit.match,
          callers: hit.callers.slice(0, NEIGHBOURS_SHOWN).map(refer),
          caller_count: hit.caller_count,
          callees: hit.callees.slice(0, NEIGHBOURS_SHOWN).map(refer),
          unresolved_callees: hit.unresolved_callees.slice(0, NEIGHBOURS_SHOWN),
        })),
      };
    } catch (error) {
      if (error instanceof AppError && error.status === 404) {
        throw new ToolError(`there is no code project named ${project} in this workspace`);
      }
      throw error;
    }
  },
});

/**
 * The project to search: the one named (if the agent may search it), else the only one the
 * agent may search. Otherwise the model is told which names it may use.
 */
async function chooseProject(
  named: string | undefined,
  context: ToolContext<{ projects?: string[] }>,
): Promise<string> {
  const allowed = context.config.projects;
  if (named !== undefined) {
    if (allowed && !allowed.includes(named)) {
      throw new ToolError(`project ${named} is not among this agent's code projects (${allowed.join(', ')})`);
    }
    return named;
  }
  if (allowed?.length === 1) return allowed[0] as string;
  const page = await context.services.codegraph.listProjects(
    { workspaceId: context.workspaceId },
    { limit: 50, offset: 0 },
  );
  const names = page.items.map((item) => item.name).filter((name) => !allowed || allowed.includes(name));
  if (names.length === 1) return names[0] as string;
  if (names.length === 0) throw new ToolError('no code project is indexed in this workspace yet');
  throw new ToolError(`name the project to search, one of: ${names.slice(0, 20).join(', ')}`);
}
