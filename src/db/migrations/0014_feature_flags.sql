CREATE TABLE "feature_flags" (
	"workspace_id" uuid NOT NULL,
	"key" varchar(100) NOT NULL,
	"type" varchar(10) NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"default_value" jsonb NOT NULL,
	"variants" jsonb NOT NULL,
	"rules" jsonb NOT NULL,
	"rollout" jsonb,
	"salt" varchar(100),
	"version" integer DEFAULT 1 NOT NULL,
	"updated_by" varchar(255) NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "feature_flags_workspace_id_key_pk" PRIMARY KEY("workspace_id","key")
);
--> statement-breakpoint
ALTER TABLE "feature_flags" ADD CONSTRAINT "feature_flags_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;