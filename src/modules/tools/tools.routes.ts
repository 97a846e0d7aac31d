import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Json } from '../../http/schemas.ts';
import type { ToolsService } from './tools.service.ts';

const ToolInfoSchema = Type.Object({
  name: Type.String(),
  description: Type.String({ description: 'what the model reads' }),
  input_schema: Type.Record(Type.String(), Type.Unknown(), {
    description: 'JSON Schema of the model’s arguments',
  }),
  config_schema: Type.Record(Type.String(), Type.Unknown(), {
    description: 'JSON Schema of an agent’s `tools[n].config` for this tool',
  }),
});

/** The tools agents may use. */
export const toolsRoutes: FastifyPluginAsyncTypebox<{ tools: ToolsService }> = async (app, { tools }) => {
  app.get(
    '/tools',
    {
      schema: {
        operationId: 'listTools',
        tags: ['Tools'],
        summary: 'List the tools agents may use',
        description:
          'Every tool of the registry with its argument schema (what the model sends) and config schema (what an agent’s `tools: [{name, config}]` may set). An agent naming another tool is refused (400 naming body.tools.<n>.name).',
        response: {
          200: Json('The tools agents may use', Type.Object({ items: Type.Array(ToolInfoSchema) })),
        },
      },
    },
    async () => ({ items: tools.list() }),
  );
};
