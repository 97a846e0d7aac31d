CREATE TABLE "credential_audit_archive" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"original_id" bigint NOT NULL,
	"credential_id" integer NOT NULL,
	"workspace_id" uuid NOT NULL,
	"action" varchar(50) NOT NULL,
	"user_id" varchar(255),
	"ip_address" varchar(64),
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"prev_hash" varchar(64) NOT NULL,
	"hash" varchar(64) NOT NULL,
	"credential_name" varchar(255) NOT NULL,
	"archived_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "credential_audit_logs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"credential_id" integer NOT NULL,
	"workspace_id" uuid NOT NULL,
	"action" varchar(50) NOT NULL,
	"user_id" varchar(255),
	"ip_address" varchar(64),
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"prev_hash" varchar(64) NOT NULL,
	"hash" varchar(64) NOT NULL
);
--> statement-breakpoint
CREATE TABLE "credential_types" (
	"id" serial PRIMARY KEY NOT NULL,
	"workspace_id" uuid,
	"name" varchar(255) NOT NULL,
	"display_name" varchar(255) NOT NULL,
	"category" varchar(100) NOT NULL,
	"icon" varchar(50),
	"logo" varchar(255),
	"description" text,
	"schema_definition" jsonb NOT NULL,
	"test_endpoint" jsonb,
	"is_system" boolean DEFAULT false NOT NULL,
	"is_active" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "credentials" (
	"id" serial PRIMARY KEY NOT NULL,
	"name" varchar(255) NOT NULL,
	"workspace_id" uuid NOT NULL,
	"credential_type_id" integer NOT NULL,
	"encrypted_data" text NOT NULL,
	"environment" varchar(50) DEFAULT 'production' NOT NULL,
	"description" text,
	"tags" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"is_active" boolean DEFAULT true NOT NULL,
	"expires_at" timestamp with time zone,
	"last_tested" timestamp with time zone,
	"test_status" varchar(50),
	"test_message" text,
	"created_by" varchar(255),
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "workspace_keys" (
	"workspace_id" uuid PRIMARY KEY NOT NULL,
	"wrapped_key" text NOT NULL,
	"master_key_id" varchar(32) NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"rotated_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "workspace_settings" (
	"workspace_id" uuid NOT NULL,
	"key" varchar(100) NOT NULL,
	"value" jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "workspace_settings_workspace_id_key_pk" PRIMARY KEY("workspace_id","key")
);
--> statement-breakpoint
ALTER TABLE "credential_audit_archive" ADD CONSTRAINT "credential_audit_archive_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credential_audit_logs" ADD CONSTRAINT "credential_audit_logs_credential_id_credentials_id_fk" FOREIGN KEY ("credential_id") REFERENCES "public"."credentials"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credential_types" ADD CONSTRAINT "credential_types_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credentials" ADD CONSTRAINT "credentials_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credentials" ADD CONSTRAINT "credentials_credential_type_id_credential_types_id_fk" FOREIGN KEY ("credential_type_id") REFERENCES "public"."credential_types"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "workspace_keys" ADD CONSTRAINT "workspace_keys_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "workspace_settings" ADD CONSTRAINT "workspace_settings_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "credential_audit_archive_workspace_idx" ON "credential_audit_archive" USING btree ("workspace_id","credential_id","original_id");--> statement-breakpoint
CREATE INDEX "credential_audit_logs_credential_idx" ON "credential_audit_logs" USING btree ("credential_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "credential_types_system_name_key" ON "credential_types" USING btree ("name") WHERE "credential_types"."workspace_id" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "credential_types_workspace_name_key" ON "credential_types" USING btree ("workspace_id","name") WHERE "credential_types"."workspace_id" is not null;--> statement-breakpoint
CREATE INDEX "credentials_workspace_created_idx" ON "credentials" USING btree ("workspace_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "credentials_type_idx" ON "credentials" USING btree ("credential_type_id");--> statement-breakpoint
CREATE UNIQUE INDEX "credentials_active_name_key" ON "credentials" USING btree ("workspace_id","name","environment") WHERE "credentials"."is_active";--> statement-breakpoint
CREATE INDEX "workspace_keys_master_key_id_idx" ON "workspace_keys" USING btree ("master_key_id");