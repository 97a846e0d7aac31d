CREATE TABLE "playbook_schedules" (
	"workspace_id" uuid PRIMARY KEY NOT NULL,
	"cron" varchar(100),
	"time_zone" varchar(64),
	"enabled" boolean DEFAULT true NOT NULL,
	"slot" timestamp with time zone,
	"claimed_by" varchar(100),
	"claimed_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"last_error" text,
	"last_result" jsonb,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "playbook_schedules" ADD CONSTRAINT "playbook_schedules_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;