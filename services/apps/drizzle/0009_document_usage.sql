CREATE TABLE "apps"."document_usage" (
	"app_id" text NOT NULL,
	"shard" smallint NOT NULL,
	"documents" integer DEFAULT 0 NOT NULL,
	"bytes" bigint DEFAULT 0 NOT NULL,
	"allowed" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "document_usage_app_id_shard_pk" PRIMARY KEY("app_id","shard")
);
--> statement-breakpoint
ALTER TABLE "apps"."document_usage" ADD CONSTRAINT "document_usage_app_id_apps_id_fk" FOREIGN KEY ("app_id") REFERENCES "apps"."apps"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Each app's counts so far, carried over into shard 0 with no room of its own: the app's first add shares out its room.
INSERT INTO "apps"."document_usage" ("app_id", "shard", "documents", "bytes", "allowed") SELECT "app_id", 0, "documents", "document_bytes", "documents" FROM "apps"."data_usage" WHERE "documents" <> 0 OR "document_bytes" <> 0;
