CREATE TABLE "cors_settings" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"origins" jsonb NOT NULL,
	"methods" jsonb NOT NULL,
	"headers" jsonb NOT NULL,
	"exposed_headers" jsonb NOT NULL,
	"credentials" boolean NOT NULL,
	"max_age" integer NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"updated_by" varchar(255) NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "cors_settings_single_row" CHECK ("cors_settings"."id" = 1)
);
--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "created_by" varchar(255);--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "time_zone" varchar(64);--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "default_model" jsonb;--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "updated_at" timestamp with time zone DEFAULT now() NOT NULL;