CREATE TABLE "playbook_attachments" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"workspace_id" uuid NOT NULL,
	"playbook_id" uuid NOT NULL,
	"agent_id" uuid NOT NULL,
	"when" text NOT NULL,
	"mode" varchar(10) NOT NULL,
	"triggers" integer DEFAULT 0 NOT NULL,
	"created_by" varchar(255),
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "run_steps" ADD COLUMN "playbook_triggers" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "playbook_attachments" ADD CONSTRAINT "playbook_attachments_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "playbook_attachments" ADD CONSTRAINT "playbook_attachments_playbook_id_playbooks_id_fk" FOREIGN KEY ("playbook_id") REFERENCES "public"."playbooks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "playbook_attachments" ADD CONSTRAINT "playbook_attachments_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "playbook_attachments_playbook_agent_idx" ON "playbook_attachments" USING btree ("playbook_id","agent_id");--> statement-breakpoint
CREATE INDEX "playbook_attachments_agent_idx" ON "playbook_attachments" USING btree ("workspace_id","agent_id");