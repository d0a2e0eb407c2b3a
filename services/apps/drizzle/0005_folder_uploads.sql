CREATE TABLE "apps"."folder_uploads" (
	"id" text PRIMARY KEY NOT NULL,
	"token" text NOT NULL,
	"user_id" text NOT NULL,
	"kind" text NOT NULL,
	"ctx" jsonb NOT NULL,
	"target" jsonb NOT NULL,
	"manifest" jsonb,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "folder_uploads_token_unique" UNIQUE("token")
);
--> statement-breakpoint
ALTER TABLE "apps"."uploads" ADD COLUMN "batch" text;--> statement-breakpoint
ALTER TABLE "apps"."uploads" ADD COLUMN "path" text;--> statement-breakpoint
CREATE UNIQUE INDEX "uploads_batch_path" ON "apps"."uploads" USING btree ("batch","path");