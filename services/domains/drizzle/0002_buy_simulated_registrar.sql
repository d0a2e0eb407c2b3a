CREATE TABLE "domains"."domain_quotes" (
	"confirm_id" text PRIMARY KEY NOT NULL,
	"domain" text NOT NULL,
	"account_id" text NOT NULL,
	"currency" text NOT NULL,
	"first_year_minor" bigint NOT NULL,
	"renewal_minor" bigint NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "domains"."simulated_offers" (
	"domain" text PRIMARY KEY NOT NULL,
	"available" boolean DEFAULT true NOT NULL,
	"premium" boolean DEFAULT false NOT NULL,
	"first_year_minor" bigint NOT NULL,
	"renewal_minor" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "domains"."simulated_registrations" (
	"domain" text PRIMARY KEY NOT NULL,
	"ref" text NOT NULL,
	"price_minor" bigint NOT NULL,
	"registrant" jsonb NOT NULL,
	"records" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"requested_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"renewals" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "domains"."bought_domains" ADD COLUMN "buyer_email" text;--> statement-breakpoint
ALTER TABLE "domains"."bought_domains" ADD COLUMN "buyer_name" text;--> statement-breakpoint
ALTER TABLE "domains"."bought_domains" ADD COLUMN "account_kind" text;--> statement-breakpoint
ALTER TABLE "domains"."bought_domains" ADD COLUMN "zone_records" jsonb;--> statement-breakpoint
ALTER TABLE "domains"."bought_domains" ADD COLUMN "registered_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "domains"."bought_domains" ADD COLUMN "live_at" timestamp with time zone;