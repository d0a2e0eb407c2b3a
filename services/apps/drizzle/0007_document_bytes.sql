ALTER TABLE "apps"."data_usage" ADD COLUMN "document_bytes" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
INSERT INTO "apps"."data_usage" ("app_id", "documents") SELECT "app_id", count(*) FROM "apps"."documents" GROUP BY "app_id" ON CONFLICT ("app_id") DO NOTHING;--> statement-breakpoint
UPDATE "apps"."data_usage" AS u SET "document_bytes" = d."bytes" FROM (SELECT "app_id", sum("bytes") AS "bytes" FROM "apps"."documents" GROUP BY "app_id") AS d WHERE d."app_id" = u."app_id";
