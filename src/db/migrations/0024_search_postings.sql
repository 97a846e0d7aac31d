DROP INDEX "chunks_source_idx";--> statement-breakpoint
ALTER TABLE "index_stats" ADD COLUMN "writes" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "chunks_source_idx" ON "chunks" USING btree ("workspace_id","source_id","generation","id");