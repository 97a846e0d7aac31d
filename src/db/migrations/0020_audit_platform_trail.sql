CREATE TABLE "audit_platform_head" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"hash" varchar(64) NOT NULL,
	"last_id" bigint,
	CONSTRAINT "audit_platform_head_single_row" CHECK ("audit_platform_head"."id" = 1)
);
--> statement-breakpoint
ALTER TABLE "audit_records" ALTER COLUMN "workspace_id" DROP NOT NULL;