CREATE TABLE "apps"."outbox" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"subject" text NOT NULL,
	"event" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"sent_at" timestamp with time zone,
	CONSTRAINT "outbox_id_unique" UNIQUE("id")
);
--> statement-breakpoint
CREATE INDEX "outbox_pending" ON "apps"."outbox" USING btree ("seq") WHERE "apps"."outbox"."sent_at" is null;