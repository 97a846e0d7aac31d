CREATE TABLE "playbooks" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"workspace_id" uuid NOT NULL,
	"pattern_key" varchar(64) NOT NULL,
	"name" varchar(255) NOT NULL,
	"name_edited" boolean DEFAULT false NOT NULL,
	"description" text NOT NULL,
	"description_edited" boolean DEFAULT false NOT NULL,
	"category" varchar(50),
	"category_edited" boolean DEFAULT false NOT NULL,
	"category_votes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"items" text[] NOT NULL,
	"agent_pattern" text[] NOT NULL,
	"tool_pattern" text[] DEFAULT '{}'::text[] NOT NULL,
	"context_pattern" jsonb NOT NULL,
	"goal_template" text NOT NULL,
	"support" integer NOT NULL,
	"matching_runs" integer NOT NULL,
	"confidence" double precision NOT NULL,
	"lift" double precision NOT NULL,
	"avg_duration_ms" integer NOT NULL,
	"avg_cost" double precision NOT NULL,
	"quality_score" double precision NOT NULL,
	"quality_parts" jsonb NOT NULL,
	"example_run_ids" uuid[] NOT NULL,
	"mined_at" timestamp with time zone NOT NULL,
	"archived_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "playbook_id" uuid;--> statement-breakpoint
ALTER TABLE "playbooks" ADD CONSTRAINT "playbooks_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "playbooks_workspace_pattern_idx" ON "playbooks" USING btree ("workspace_id","pattern_key");--> statement-breakpoint
CREATE INDEX "playbooks_workspace_quality_idx" ON "playbooks" USING btree ("workspace_id","quality_score" DESC NULLS LAST,"id");--> statement-breakpoint
ALTER TABLE "workflows" ADD CONSTRAINT "workflows_playbook_id_playbooks_id_fk" FOREIGN KEY ("playbook_id") REFERENCES "public"."playbooks"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "workflows_playbook_idx" ON "workflows" USING btree ("playbook_id") WHERE "workflows"."playbook_id" is not null;