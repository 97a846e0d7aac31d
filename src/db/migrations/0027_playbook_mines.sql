CREATE TABLE "playbook_mines" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"workspace_id" uuid NOT NULL,
	"status" varchar(20) NOT NULL,
	"phase" varchar(20),
	"input" jsonb NOT NULL,
	"runs" integer NOT NULL,
	"requested_by" varchar(255) NOT NULL,
	"result" jsonb,
	"error" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "playbook_mines" ADD CONSTRAINT "playbook_mines_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "playbook_mines_workspace_idx" ON "playbook_mines" USING btree ("workspace_id","created_at");--> statement-breakpoint
CREATE INDEX "playbook_mines_unfinished_idx" ON "playbook_mines" USING btree ("status") WHERE "playbook_mines"."status" in ('queued', 'running');