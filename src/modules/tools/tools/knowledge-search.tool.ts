import { Type } from 'typebox';
import { AppError } from '../../../errors.ts';
import { defineTool, ToolError } from '../tool.ts';

/** Characters of each passage handed to the model; longer chunks are cut and say so. */
export const MAX_PASSAGE_CHARS = 4_000;

const Input = Type.Object(
  {
    query: Type.String({
      minLength: 1,
      maxLength: 2000,
      description: 'what to look for, in plain words',
    }),
    top_k: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 20, description: 'documents to return (default 5)' }),
    ),
  },
  { additionalProperties: false },
);

const Config = Type.Object(
  {
    source_ids: Type.Optional(
      Type.Array(Type.String({ format: 'uuid' }), {
        minItems: 1,
        maxItems: 100,
        uniqueItems: true,
        description: 'the knowledge sources this agent searches; every source of the workspace when absent',
      }),
    ),
    tags: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
        minItems: 1,
        maxItems: 50,
        uniqueItems: true,
        description: 'only documents carrying one of these tags',
      }),
    ),
    min_score: Type.Optional(
      Type.Number({
        minimum: -1,
        maximum: 1_000_000,
        description: 'leave out weaker results (scale per mode)',
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * `knowledge_search`: the model searches the workspace's documents (the search index of
 * `POST /api/documents/search`, in its default mode), scoped to the run's workspace and, when
 * the agent's config says so, to some sources or tags. It gets the best passages with their
 * document, heading path and score, to quote and cite.
 */
export default defineTool({
  name: 'knowledge_search',
  description:
    "Search this workspace's knowledge base (uploaded documents, folders, web pages) and get the best passages, " +
    'each with its document title, the headings it sits under and a score. Cite the document when you use a passage.',
  input: Input,
  config: Config,
  async execute(input, context) {
    try {
      const found = await context.services.knowledge.search(
        {
          query: input.query,
          top_k: input.top_k ?? 5,
          ...(context.config.source_ids ? { source_ids: context.config.source_ids } : {}),
          ...(context.config.tags ? { tags: context.config.tags } : {}),
          ...(context.config.min_score === undefined ? {} : { min_score: context.config.min_score }),
        },
        context.signal,
      );
      return {
        mode: found.mode,
        results: found.results.map((result) => ({
          document_id: result.document.id,
          title: result.document.title,
          filename: result.document.filename,
          source: result.document.source.name,
          heading_path: result.chunk.heading_path,
          score: Math.round(result.score * 10_000) / 10_000,
          passage:
            result.chunk.text.length > MAX_PASSAGE_CHARS
              ? `${result.chunk.text.slice(0, MAX_PASSAGE_CHARS)}…`
              : result.chunk.text,
        })),
      };
    } catch (error) {
      if (error instanceof AppError)
        throw new ToolError(`the search failed: ${error.message}`, { cause: error });
      throw error;
    }
  },
});
