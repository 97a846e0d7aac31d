CREATE TABLE "analytics_daily_runs" (
	"workspace_id" uuid NOT NULL,
	"day" date NOT NULL,
	"workflow_id" uuid,
	"workflow_name" varchar(255) NOT NULL,
	"runs" integer NOT NULL,
	"completed" integer NOT NULL,
	"failed" integer NOT NULL,
	"cancelled" integer NOT NULL,
	"tokens_in" bigint NOT NULL,
	"tokens_out" bigint NOT NULL,
	"cost" double precision NOT NULL
);
--> statement-breakpoint
CREATE TABLE "analytics_rollup_days" (
	"workspace_id" uuid NOT NULL,
	"day" date NOT NULL,
	"dirty" boolean DEFAULT false NOT NULL,
	"computed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"latency_count" integer DEFAULT 0 NOT NULL,
	"latency_hist" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"latency_p50_ms" double precision,
	"latency_p95_ms" double precision,
	CONSTRAINT "analytics_rollup_days_workspace_id_day_pk" PRIMARY KEY("workspace_id","day")
);
--> statement-breakpoint
ALTER TABLE "analytics_daily_runs" ADD CONSTRAINT "analytics_daily_runs_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "analytics_rollup_days" ADD CONSTRAINT "analytics_rollup_days_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "analytics_daily_runs_workspace_day_idx" ON "analytics_daily_runs" USING btree ("workspace_id","day");--> statement-breakpoint
CREATE INDEX "analytics_rollup_days_dirty_idx" ON "analytics_rollup_days" USING btree ("workspace_id","day") WHERE "analytics_rollup_days"."dirty";