CREATE TABLE "analytics_daily_agents" (
	"workspace_id" uuid NOT NULL,
	"day" date NOT NULL,
	"agent_id" uuid NOT NULL,
	"runs" integer NOT NULL,
	"completed" integer NOT NULL,
	"failed" integer NOT NULL,
	"steps" integer NOT NULL,
	"tokens_in" bigint NOT NULL,
	"tokens_out" bigint NOT NULL,
	"cost" double precision NOT NULL,
	"busy_ms" double precision NOT NULL,
	"latency_hist" jsonb DEFAULT '{}'::jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "analytics_daily_steps" (
	"workspace_id" uuid NOT NULL,
	"day" date NOT NULL,
	"provider" varchar(100),
	"model" varchar(255),
	"agent_id" uuid,
	"agent_name" varchar(255),
	"steps" integer NOT NULL,
	"tokens_in" bigint NOT NULL,
	"tokens_out" bigint NOT NULL,
	"cost" double precision NOT NULL
);
--> statement-breakpoint
ALTER TABLE "analytics_rollup_days" ADD COLUMN "open_steps" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "analytics_daily_agents" ADD CONSTRAINT "analytics_daily_agents_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "analytics_daily_steps" ADD CONSTRAINT "analytics_daily_steps_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "analytics_daily_agents_workspace_day_idx" ON "analytics_daily_agents" USING btree ("workspace_id","day");--> statement-breakpoint
CREATE INDEX "analytics_daily_steps_workspace_day_idx" ON "analytics_daily_steps" USING btree ("workspace_id","day");