CREATE TABLE "document_contents" (
	"document_id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"content" jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "documents" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"workspace_id" uuid NOT NULL,
	"source_id" uuid NOT NULL,
	"title" text NOT NULL,
	"filename" varchar(1024) NOT NULL,
	"origin" text,
	"media_type" varchar(255),
	"format" varchar(20),
	"size_bytes" integer NOT NULL,
	"content_hash" varchar(64),
	"status" varchar(20) DEFAULT 'processing' NOT NULL,
	"failure_reason" text,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"chunk_count" integer DEFAULT 0 NOT NULL,
	"indexed_generation" integer,
	"index_run_id" uuid,
	"indexed_at" timestamp with time zone,
	"processing_attempts" integer DEFAULT 0 NOT NULL,
	"created_by" varchar(255),
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sources" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"workspace_id" uuid NOT NULL,
	"name" varchar(255) NOT NULL,
	"kind" varchar(20) NOT NULL,
	"is_default" boolean DEFAULT false NOT NULL,
	"directory" jsonb,
	"url" jsonb,
	"chunking" jsonb NOT NULL,
	"embedding" jsonb NOT NULL,
	"generation" integer DEFAULT 1 NOT NULL,
	"index_status" varchar(20) DEFAULT 'idle' NOT NULL,
	"index_scope" varchar(20),
	"index_run_id" uuid,
	"index_target_generation" integer DEFAULT 1 NOT NULL,
	"index_document_ids" uuid[],
	"documents_total" integer DEFAULT 0 NOT NULL,
	"documents_done" integer DEFAULT 0 NOT NULL,
	"documents_failed" integer DEFAULT 0 NOT NULL,
	"index_started_at" timestamp with time zone,
	"index_finished_at" timestamp with time zone,
	"index_error" text,
	"index_attempts" integer DEFAULT 0 NOT NULL,
	"created_by" varchar(255),
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "document_contents" ADD CONSTRAINT "document_contents_document_id_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."documents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "document_contents" ADD CONSTRAINT "document_contents_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sources" ADD CONSTRAINT "sources_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "document_contents_workspace_idx" ON "document_contents" USING btree ("workspace_id");--> statement-breakpoint
CREATE UNIQUE INDEX "documents_source_hash_key" ON "documents" USING btree ("source_id","content_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "documents_source_origin_key" ON "documents" USING btree ("source_id","origin");--> statement-breakpoint
CREATE INDEX "documents_workspace_created_idx" ON "documents" USING btree ("workspace_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "documents_workspace_status_idx" ON "documents" USING btree ("workspace_id","status");--> statement-breakpoint
CREATE INDEX "documents_tags_idx" ON "documents" USING gin ("tags");--> statement-breakpoint
CREATE INDEX "documents_processing_idx" ON "documents" USING btree ("updated_at") WHERE "documents"."status" = 'processing';--> statement-breakpoint
CREATE UNIQUE INDEX "sources_workspace_name_key" ON "sources" USING btree ("workspace_id","name");--> statement-breakpoint
CREATE UNIQUE INDEX "sources_workspace_default_key" ON "sources" USING btree ("workspace_id") WHERE "sources"."is_default";--> statement-breakpoint
CREATE INDEX "sources_workspace_created_idx" ON "sources" USING btree ("workspace_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "sources_unfinished_runs_idx" ON "sources" USING btree ("updated_at") WHERE "sources"."index_status" in ('queued', 'running');--> statement-breakpoint
ALTER TABLE "chunks" ADD CONSTRAINT "chunks_document_id_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."documents"("id") ON DELETE cascade ON UPDATE no action;