-- pg_trgm: fuzzy matching of symbol names (similarity, % and gin_trgm_ops); a trusted extension
-- since PostgreSQL 13, so the database owner may create it; PGlite loads it as a contrib bundle.
CREATE EXTENSION IF NOT EXISTS pg_trgm;--> statement-breakpoint
CREATE TABLE "codegraph_edges" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"project_id" uuid NOT NULL,
	"workspace_id" uuid NOT NULL,
	"generation" integer NOT NULL,
	"kind" varchar(20) NOT NULL,
	"source_id" bigint,
	"target_id" bigint,
	"file" text NOT NULL,
	"line" integer NOT NULL,
	"target_name" text NOT NULL,
	"module" text,
	"target_file" text,
	"resolution" varchar(20),
	"occurrences" integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "codegraph_projects" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"workspace_id" uuid NOT NULL,
	"name" varchar(100) NOT NULL,
	"status" varchar(20) NOT NULL,
	"active_generation" integer DEFAULT 0 NOT NULL,
	"last_generation" integer DEFAULT 0 NOT NULL,
	"source" jsonb NOT NULL,
	"stats" jsonb,
	"error" text,
	"indexed_at" timestamp with time zone,
	"created_by" varchar(255),
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "codegraph_symbols" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"project_id" uuid NOT NULL,
	"workspace_id" uuid NOT NULL,
	"generation" integer NOT NULL,
	"kind" varchar(20) NOT NULL,
	"name" text NOT NULL,
	"qualified_name" text NOT NULL,
	"file" text NOT NULL,
	"language" varchar(20) NOT NULL,
	"start_line" integer NOT NULL,
	"end_line" integer NOT NULL,
	"signature" text NOT NULL,
	"doc" text,
	"parent_id" bigint,
	"caller_count" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "codegraph_uploads" (
	"project_id" uuid NOT NULL,
	"generation" integer NOT NULL,
	"workspace_id" uuid NOT NULL,
	"archive" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "codegraph_uploads_project_id_generation_pk" PRIMARY KEY("project_id","generation")
);
--> statement-breakpoint
ALTER TABLE "codegraph_edges" ADD CONSTRAINT "codegraph_edges_project_id_codegraph_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."codegraph_projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "codegraph_edges" ADD CONSTRAINT "codegraph_edges_source_id_codegraph_symbols_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."codegraph_symbols"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "codegraph_edges" ADD CONSTRAINT "codegraph_edges_target_id_codegraph_symbols_id_fk" FOREIGN KEY ("target_id") REFERENCES "public"."codegraph_symbols"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "codegraph_projects" ADD CONSTRAINT "codegraph_projects_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "codegraph_symbols" ADD CONSTRAINT "codegraph_symbols_project_id_codegraph_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."codegraph_projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "codegraph_uploads" ADD CONSTRAINT "codegraph_uploads_project_id_codegraph_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."codegraph_projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "codegraph_edges_project_idx" ON "codegraph_edges" USING btree ("project_id","generation","kind");--> statement-breakpoint
CREATE INDEX "codegraph_edges_source_idx" ON "codegraph_edges" USING btree ("source_id");--> statement-breakpoint
CREATE INDEX "codegraph_edges_target_idx" ON "codegraph_edges" USING btree ("target_id");--> statement-breakpoint
CREATE UNIQUE INDEX "codegraph_projects_workspace_name_idx" ON "codegraph_projects" USING btree ("workspace_id","name");--> statement-breakpoint
CREATE INDEX "codegraph_projects_indexing_idx" ON "codegraph_projects" USING btree ("status") WHERE "codegraph_projects"."status" = 'indexing';--> statement-breakpoint
CREATE INDEX "codegraph_symbols_name_idx" ON "codegraph_symbols" USING btree ("project_id","generation",lower("name") text_pattern_ops);--> statement-breakpoint
CREATE INDEX "codegraph_symbols_name_trgm_idx" ON "codegraph_symbols" USING gin ("name" gin_trgm_ops);