import { Type } from 'typebox';
import { SearchModeSchema } from '../../db/schema/retrieval.ts';
import { Uuid } from '../../http/schemas.ts';
import { DEFAULT_TOP_K, KEYWORD_CANDIDATE_BUDGET, MAX_TOP_K } from './retrieval.service.ts';

const Weight = Type.Number({ minimum: 0, maximum: 100 });

export const SearchBody = Type.Object(
  {
    query: Type.String({
      minLength: 1,
      maxLength: 2000,
      description: 'what to look for, in plain words (English stemming; stop words are ignored)',
    }),
    top_k: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_TOP_K,
        description: `documents to return, each with its best chunk (default ${DEFAULT_TOP_K})`,
      }),
    ),
    source_ids: Type.Optional(
      Type.Array(Uuid(), {
        minItems: 1,
        maxItems: 100,
        uniqueItems: true,
        description:
          'search these sources only (another workspace’s ids find nothing); all sources when absent',
      }),
    ),
    tags: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
        minItems: 1,
        maxItems: 50,
        uniqueItems: true,
        description: 'only documents carrying at least one of these tags',
      }),
    ),
    mode: Type.Optional(
      Type.Union([SearchModeSchema], {
        description:
          'keyword (BM25), vector (cosine similarity of embeddings) or hybrid (reciprocal rank fusion of both); default hybrid when the sources searched have embeddings, else keyword',
      }),
    ),
    min_score: Type.Optional(
      Type.Number({
        minimum: -1,
        maximum: 1_000_000,
        description:
          'leave out documents scoring below it; keyword: BM25 (0 up, unbounded), vector: cosine similarity (-1 to 1), hybrid: fused rank score (0 to 1, 1 = first in every arm)',
      }),
    ),
    weights: Type.Optional(
      Type.Object(
        {
          keyword: Type.Optional(Weight),
          vector: Type.Optional(Weight),
        },
        {
          additionalProperties: false,
          description: 'hybrid only: each arm’s weight in the rank fusion (default 1 and 1)',
        },
      ),
    ),
    exact: Type.Optional(
      Type.Boolean({
        description: `default true: keyword ranking exactly BM25's, every candidate scored however many; false allows a faster, approximate ranking when the query's common words would bring more than ${KEYWORD_CANDIDATE_BUDGET.toLocaleString('en')} candidate postings: only the chunks of its rarest words are ranked, and the response says exact: false`,
      }),
    ),
  },
  { additionalProperties: false },
);

const HeadingPath = Type.Array(Type.String(), {
  description: 'the headings the chunk sits under, outermost first',
});

export const SearchResultSchema = Type.Object({
  document: Type.Object({
    id: Uuid(),
    title: Type.String(),
    filename: Type.String(),
    tags: Type.Array(Type.String()),
    source: Type.Object({ id: Uuid(), name: Type.String() }),
  }),
  score: Type.Number({ description: 'the best chunk’s score, on the scale of the mode' }),
  scores: Type.Object(
    {
      keyword: Type.Union([Type.Number(), Type.Null()], {
        description:
          'BM25 of the document’s best chunk in the keyword ranking (0 up, unbounded); null when the keyword arm did not rank any of its chunks or did not run (vector mode, or hybrid with keyword weight 0)',
      }),
      vector: Type.Union([Type.Number(), Type.Null()], {
        description:
          'cosine similarity of the query’s and the document’s best chunk’s embeddings in the vector ranking (-1 to 1); null when the vector arm did not rank any of its chunks or did not run (keyword mode, or hybrid with vector weight 0)',
      }),
    },
    {
      description:
        'the document’s score in each arm as the ranking computed it before fusion (and before any rerank); in keyword or vector mode the part of the arm run equals `score`',
    },
  ),
  chunk: Type.Object({
    id: Type.Integer(),
    text: Type.String(),
    heading_path: HeadingPath,
    position: Type.Integer({ description: 'the chunk’s place in its document, from 0' }),
  }),
  highlights: Type.Array(
    Type.Object({
      chunk_id: Type.Integer(),
      text: Type.String(),
      heading_path: HeadingPath,
      score: Type.Number(),
    }),
    { description: 'further matching chunks of the document, best first (at most 3)' },
  ),
});

export const SearchResponseSchema = Type.Object({
  results: Type.Array(SearchResultSchema),
  mode: SearchModeSchema,
  exact: Type.Boolean({
    description:
      'false when the keyword ranking was limited to the chunks of the query’s rarest words (only when the request said exact: false); vector search is approximate (HNSW) either way',
  }),
  took_ms: Type.Number(),
});
