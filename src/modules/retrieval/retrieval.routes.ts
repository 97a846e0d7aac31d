import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Json } from '../../http/schemas.ts';
import { SearchBody, SearchResponseSchema } from './retrieval.schemas.ts';
import type { RetrievalService } from './retrieval.service.ts';

const tags = ['Knowledge'];

/** Search over the workspace's indexed documents. */
export const retrievalRoutes: FastifyPluginAsyncTypebox<{
  retrieval: Pick<RetrievalService, 'search'>;
}> = async (app, { retrieval }) => {
  app.post(
    '/documents/search',
    {
      // A read: viewers may search.
      config: { role: 'viewer' },
      schema: {
        operationId: 'searchDocuments',
        tags,
        summary: 'Search documents',
        description:
          'Finds the chunks of the workspace’s documents that answer a query, one result per document (its best chunk, the next ones as highlights). keyword ranks by BM25 over the full-text index, vector by cosine similarity of embeddings (pgvector), hybrid fuses both by reciprocal rank (k = 60). Filters: source_ids, tags; min_score on the mode’s scale. While the feature flag search.keyword_only is on, every search is keyword. See docs/retrieval.md.',
        body: SearchBody,
        response: { 200: Json('The ranked matches', SearchResponseSchema) },
      },
    },
    async (request) => retrieval.search(request.caller, request.body),
  );
};
