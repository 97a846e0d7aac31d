CREATE TABLE "audit_chain_heads" (
	"workspace_id" uuid PRIMARY KEY NOT NULL,
	"hash" varchar(64) NOT NULL,
	"last_id" bigint
);
--> statement-breakpoint
CREATE TABLE "audit_records" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"actor_id" varchar(255) NOT NULL,
	"actor_kind" varchar(20) NOT NULL,
	"action" varchar(100) NOT NULL,
	"target_type" varchar(50) NOT NULL,
	"target_id" varchar(255) NOT NULL,
	"changes" jsonb NOT NULL,
	"request_id" varchar(128),
	"ip_address" varchar(64),
	"prev_hash" varchar(64) NOT NULL,
	"hash" varchar(64) NOT NULL
);
--> statement-breakpoint
ALTER TABLE "audit_chain_heads" ADD CONSTRAINT "audit_chain_heads_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_records" ADD CONSTRAINT "audit_records_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_records_workspace_id_idx" ON "audit_records" USING btree ("workspace_id","id");--> statement-breakpoint
CREATE INDEX "audit_records_workspace_time_idx" ON "audit_records" USING btree ("workspace_id","created_at","id");