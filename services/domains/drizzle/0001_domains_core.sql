CREATE SCHEMA IF NOT EXISTS "domains";
--> statement-breakpoint
CREATE TABLE "domains"."bought_domains" (
	"domain" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"bought_by" text NOT NULL,
	"stage" text DEFAULT 'registering' NOT NULL,
	"registrar" text NOT NULL,
	"registrar_ref" text,
	"currency" text DEFAULT 'USD' NOT NULL,
	"first_year_minor" bigint NOT NULL,
	"renewal_minor" bigint NOT NULL,
	"renews_at" timestamp with time zone,
	"auto_renew" boolean DEFAULT true NOT NULL,
	"app_id" text,
	"address" text,
	"registrant" jsonb,
	"charge_key" text NOT NULL,
	"charge_id" text,
	"charge_status" text NOT NULL,
	"problem" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "bought_domains_charge_key_unique" UNIQUE("charge_key")
);
--> statement-breakpoint
CREATE TABLE "domains"."confirm_uses" (
	"id" text PRIMARY KEY NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "domains"."hostnames" (
	"hostname" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"account_id" text NOT NULL,
	"app_id" text,
	"address" text,
	"created_by" text NOT NULL,
	"token" text NOT NULL,
	"stage" text DEFAULT 'dns' NOT NULL,
	"verified_at" timestamp with time zone,
	"records" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"problem" text,
	"checked_at" timestamp with time zone,
	"live_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "domains"."jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"key" text NOT NULL,
	"payload" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"run_at" timestamp with time zone DEFAULT now() NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"runs" integer DEFAULT 0 NOT NULL,
	"locked_by" text,
	"locked_until" timestamp with time zone,
	"last_error" text,
	"done_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "domains"."outbox" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"subject" text NOT NULL,
	"event" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"sent_at" timestamp with time zone,
	CONSTRAINT "outbox_id_unique" UNIQUE("id")
);
--> statement-breakpoint
CREATE INDEX "bought_domains_account" ON "domains"."bought_domains" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "hostnames_app" ON "domains"."hostnames" USING btree ("app_id");--> statement-breakpoint
CREATE UNIQUE INDEX "hostnames_company_account" ON "domains"."hostnames" USING btree ("account_id") WHERE "domains"."hostnames"."kind" = 'company';--> statement-breakpoint
CREATE UNIQUE INDEX "jobs_open_key" ON "domains"."jobs" USING btree ("kind","key") WHERE "domains"."jobs"."done_at" IS NULL;--> statement-breakpoint
CREATE INDEX "jobs_due" ON "domains"."jobs" USING btree ("run_at") WHERE "domains"."jobs"."done_at" IS NULL;--> statement-breakpoint
CREATE INDEX "outbox_pending" ON "domains"."outbox" USING btree ("seq") WHERE "domains"."outbox"."sent_at" is null;