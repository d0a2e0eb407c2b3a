CREATE TABLE "orgs"."activity" (
	"event_id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"time" timestamp with time zone NOT NULL,
	"service" text NOT NULL,
	"action" text NOT NULL,
	"app" text,
	"actor_user_id" text,
	"actor_email" text,
	"actor_name" text,
	"client_kind" text,
	"client_name" text,
	"grant_id" text,
	"summary" text NOT NULL,
	"event" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "orgs"."confirm_uses" (
	"id" text PRIMARY KEY NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "orgs"."invitations" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"email" text NOT NULL,
	"role" text NOT NULL,
	"permissions" jsonb NOT NULL,
	"invited_by" text NOT NULL,
	"invited_by_email" text NOT NULL,
	"invited_by_name" text NOT NULL,
	"token_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"accepted_at" timestamp with time zone,
	"accepted_by" text,
	"revoked_at" timestamp with time zone,
	CONSTRAINT "invitations_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "orgs"."mails" (
	"id" text PRIMARY KEY NOT NULL,
	"to" text NOT NULL,
	"subject" text NOT NULL,
	"body" text,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"locked_until" timestamp with time zone,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"sent_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "orgs"."outbox" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"subject" text NOT NULL,
	"event" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"sent_at" timestamp with time zone,
	CONSTRAINT "outbox_id_unique" UNIQUE("id")
);
--> statement-breakpoint
ALTER TABLE "orgs"."invitations" ADD CONSTRAINT "invitations_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "orgs"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "activity_account_time" ON "orgs"."activity" USING btree ("account_id","time");--> statement-breakpoint
CREATE UNIQUE INDEX "invitations_open" ON "orgs"."invitations" USING btree ("account_id","email") WHERE "orgs"."invitations"."accepted_at" is null and "orgs"."invitations"."revoked_at" is null;--> statement-breakpoint
CREATE INDEX "invitations_email" ON "orgs"."invitations" USING btree ("email");--> statement-breakpoint
CREATE INDEX "mails_due" ON "orgs"."mails" USING btree ("next_attempt_at") WHERE "orgs"."mails"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "mails_created" ON "orgs"."mails" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "outbox_pending" ON "orgs"."outbox" USING btree ("seq") WHERE "orgs"."outbox"."sent_at" is null;--> statement-breakpoint
CREATE INDEX "members_user" ON "orgs"."members" USING btree ("user_id");