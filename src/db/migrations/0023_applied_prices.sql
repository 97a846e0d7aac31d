ALTER TABLE "messages" ADD COLUMN "price" jsonb;--> statement-breakpoint
ALTER TABLE "run_steps" ADD COLUMN "price" jsonb;