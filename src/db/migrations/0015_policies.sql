CREATE TABLE "policy_experiments" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"workspace_id" uuid NOT NULL,
	"policy_a" varchar(100) NOT NULL,
	"policy_b" varchar(100) NOT NULL,
	"policy_a_ref" jsonb NOT NULL,
	"policy_b_ref" jsonb NOT NULL,
	"weights" jsonb NOT NULL,
	"coverage" double precision DEFAULT 1 NOT NULL,
	"unit" varchar(20) NOT NULL,
	"primary_metric" varchar(50) NOT NULL,
	"guardrail_metrics" jsonb NOT NULL,
	"status" varchar(20) NOT NULL,
	"salt" varchar(100) NOT NULL,
	"winner" varchar(20),
	"started_at" timestamp with time zone,
	"stopped_at" timestamp with time zone,
	"updated_by" varchar(255) NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "policy_exposures" (
	"experiment_id" uuid NOT NULL,
	"workspace_id" uuid NOT NULL,
	"unit_id" varchar(255) NOT NULL,
	"variant" varchar(20) NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "policy_exposures_experiment_id_unit_id_pk" PRIMARY KEY("experiment_id","unit_id")
);
--> statement-breakpoint
CREATE TABLE "policy_labels" (
	"workspace_id" uuid NOT NULL,
	"policy_id" varchar(100) NOT NULL,
	"label" varchar(50) NOT NULL,
	"version" integer NOT NULL,
	"updated_by" varchar(255) NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "policy_labels_workspace_id_policy_id_label_pk" PRIMARY KEY("workspace_id","policy_id","label")
);
--> statement-breakpoint
CREATE TABLE "policy_versions" (
	"workspace_id" uuid NOT NULL,
	"policy_id" varchar(100) NOT NULL,
	"version" integer NOT NULL,
	"content" jsonb NOT NULL,
	"content_hash" varchar(64) NOT NULL,
	"created_by" varchar(255) NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "policy_versions_workspace_id_policy_id_version_pk" PRIMARY KEY("workspace_id","policy_id","version")
);
--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "policy" jsonb;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "policy_id" varchar(100);--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "policy_version" integer;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "policy_variant" varchar(20);--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "experiment_id" uuid;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "experiment_unit" varchar(255);--> statement-breakpoint
ALTER TABLE "policy_experiments" ADD CONSTRAINT "policy_experiments_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "policy_exposures" ADD CONSTRAINT "policy_exposures_experiment_id_policy_experiments_id_fk" FOREIGN KEY ("experiment_id") REFERENCES "public"."policy_experiments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "policy_exposures" ADD CONSTRAINT "policy_exposures_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "policy_labels" ADD CONSTRAINT "policy_labels_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "policy_versions" ADD CONSTRAINT "policy_versions_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "policy_experiments_pair_idx" ON "policy_experiments" USING btree ("workspace_id","policy_a","policy_b");--> statement-breakpoint
CREATE INDEX "policy_experiments_control_idx" ON "policy_experiments" USING btree ("workspace_id","policy_a","status");--> statement-breakpoint
CREATE INDEX "policy_exposures_workspace_idx" ON "policy_exposures" USING btree ("workspace_id");--> statement-breakpoint
CREATE INDEX "runs_experiment_idx" ON "runs" USING btree ("experiment_id","policy_variant") WHERE "runs"."experiment_id" is not null;