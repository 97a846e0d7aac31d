-- pgvector (similarity search) and btree_gin (the workspace inside the full-text GIN index).
-- PostgreSQL needs both installed; CI builds pgvector when missing (.ci/install-pgvector).
CREATE EXTENSION IF NOT EXISTS vector;--> statement-breakpoint
CREATE EXTENSION IF NOT EXISTS btree_gin;--> statement-breakpoint
CREATE TABLE "chunk_embeddings" (
	"chunk_id" bigint PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"source_id" uuid NOT NULL,
	"generation" integer NOT NULL,
	"model" varchar(400) NOT NULL,
	"dimensions" smallint NOT NULL,
	"embedding" vector NOT NULL
);
--> statement-breakpoint
CREATE TABLE "chunks" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"source_id" uuid NOT NULL,
	"document_id" uuid NOT NULL,
	"generation" integer NOT NULL,
	"position" integer NOT NULL,
	"text" text NOT NULL,
	"heading_path" text[] DEFAULT '{}'::text[] NOT NULL,
	"token_count" integer NOT NULL,
	"term_count" integer NOT NULL,
	"search" "tsvector" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "index_sources" (
	"workspace_id" uuid NOT NULL,
	"source_id" uuid NOT NULL,
	"active_generation" integer NOT NULL,
	CONSTRAINT "index_sources_workspace_id_source_id_pk" PRIMARY KEY("workspace_id","source_id")
);
--> statement-breakpoint
CREATE TABLE "index_stats" (
	"workspace_id" uuid NOT NULL,
	"source_id" uuid NOT NULL,
	"generation" integer NOT NULL,
	"model" varchar(400) NOT NULL,
	"dimensions" smallint NOT NULL,
	"slot" smallint NOT NULL,
	"chunks" bigint NOT NULL,
	"terms" bigint NOT NULL,
	CONSTRAINT "index_stats_workspace_id_source_id_generation_model_slot_pk" PRIMARY KEY("workspace_id","source_id","generation","model","slot")
);
--> statement-breakpoint
CREATE TABLE "search_stats" (
	"workspace_id" uuid NOT NULL,
	"day" date NOT NULL,
	"mode" varchar(10) NOT NULL,
	"searches" bigint NOT NULL,
	"hits" bigint NOT NULL,
	"results" bigint NOT NULL,
	CONSTRAINT "search_stats_workspace_id_day_mode_pk" PRIMARY KEY("workspace_id","day","mode")
);
--> statement-breakpoint
CREATE TABLE "term_stats" (
	"workspace_id" uuid NOT NULL,
	"source_id" uuid NOT NULL,
	"generation" integer NOT NULL,
	"lexeme" text NOT NULL,
	"slot" smallint NOT NULL,
	"chunks" integer NOT NULL,
	CONSTRAINT "term_stats_workspace_id_source_id_generation_lexeme_slot_pk" PRIMARY KEY("workspace_id","source_id","generation","lexeme","slot")
);
--> statement-breakpoint
ALTER TABLE "chunk_embeddings" ADD CONSTRAINT "chunk_embeddings_chunk_id_chunks_id_fk" FOREIGN KEY ("chunk_id") REFERENCES "public"."chunks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chunks" ADD CONSTRAINT "chunks_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "index_sources" ADD CONSTRAINT "index_sources_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "index_stats" ADD CONSTRAINT "index_stats_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "search_stats" ADD CONSTRAINT "search_stats_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "term_stats" ADD CONSTRAINT "term_stats_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "chunk_embeddings_scope_idx" ON "chunk_embeddings" USING btree ("workspace_id","source_id","generation");--> statement-breakpoint
CREATE INDEX "chunk_embeddings_hnsw_256_idx" ON "chunk_embeddings" USING hnsw (("embedding"::vector(256)) vector_cosine_ops) WHERE "chunk_embeddings"."dimensions" = 256;--> statement-breakpoint
CREATE INDEX "chunk_embeddings_hnsw_384_idx" ON "chunk_embeddings" USING hnsw (("embedding"::vector(384)) vector_cosine_ops) WHERE "chunk_embeddings"."dimensions" = 384;--> statement-breakpoint
CREATE INDEX "chunk_embeddings_hnsw_512_idx" ON "chunk_embeddings" USING hnsw (("embedding"::vector(512)) vector_cosine_ops) WHERE "chunk_embeddings"."dimensions" = 512;--> statement-breakpoint
CREATE INDEX "chunk_embeddings_hnsw_768_idx" ON "chunk_embeddings" USING hnsw (("embedding"::vector(768)) vector_cosine_ops) WHERE "chunk_embeddings"."dimensions" = 768;--> statement-breakpoint
CREATE INDEX "chunk_embeddings_hnsw_1024_idx" ON "chunk_embeddings" USING hnsw (("embedding"::vector(1024)) vector_cosine_ops) WHERE "chunk_embeddings"."dimensions" = 1024;--> statement-breakpoint
CREATE INDEX "chunk_embeddings_hnsw_1536_idx" ON "chunk_embeddings" USING hnsw (("embedding"::vector(1536)) vector_cosine_ops) WHERE "chunk_embeddings"."dimensions" = 1536;--> statement-breakpoint
CREATE INDEX "chunk_embeddings_hnsw_3072_idx" ON "chunk_embeddings" USING hnsw (("embedding"::halfvec(3072)) halfvec_cosine_ops) WHERE "chunk_embeddings"."dimensions" = 3072;--> statement-breakpoint
CREATE INDEX "chunks_search_idx" ON "chunks" USING gin ("workspace_id","search");--> statement-breakpoint
CREATE INDEX "chunks_document_idx" ON "chunks" USING btree ("document_id","generation");--> statement-breakpoint
CREATE INDEX "chunks_source_idx" ON "chunks" USING btree ("workspace_id","source_id","generation");--> statement-breakpoint
-- Chunks up to a page stay uncompressed and inline: BM25 reads each candidate's tsvector
-- several times, and a compressed one would be decompressed at every read (docs/retrieval.md).
ALTER TABLE "chunks" SET (toast_tuple_target = 8160);--> statement-breakpoint
-- Statistics rows are updated in place: room on the page keeps those updates HOT.
ALTER TABLE "term_stats" SET (fillfactor = 80);--> statement-breakpoint
ALTER TABLE "index_stats" SET (fillfactor = 50);--> statement-breakpoint
-- How often the lexeme of `term` (one lexeme) occurs in `doc`, read from ts_rank: with every
-- weight 1 and no normalisation, ts_rank of a one-lexeme query is sum(1/i^2, i = 1..tf) / 1.64493406685,
-- so tf = 1 / (pi^2/6 - that sum) - 1/2, rounded. 0 when the lexeme is absent. Exact for
-- every tf a tsvector holds (255 positions per lexeme; checked by the retrieval tests).
-- One C call with a binary search in the tsvector: several times faster than unnest().
CREATE FUNCTION "bm25_term_frequency"("doc" tsvector, "term" tsquery) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT round(1 / (1.6449340668482264 - ts_rank('{1,1,1,1}'::real[], doc, term, 0)::float8 * 1.64493406685) - 0.5)::integer $$;
