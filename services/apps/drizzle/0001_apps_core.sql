CREATE TABLE "apps"."addresses" (
	"address" text PRIMARY KEY NOT NULL,
	"app_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "apps"."app_people" (
	"app_id" text NOT NULL,
	"email" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "app_people_app_id_email_pk" PRIMARY KEY("app_id","email")
);
--> statement-breakpoint
CREATE TABLE "apps"."apps" (
	"id" text PRIMARY KEY NOT NULL,
	"address" text NOT NULL,
	"name" text NOT NULL,
	"account_id" text NOT NULL,
	"owner_id" text NOT NULL,
	"owner_email" text NOT NULL,
	"owner_name" text NOT NULL,
	"visibility" text NOT NULL,
	"ai_discoverable" boolean DEFAULT false NOT NULL,
	"current_version" integer,
	"last_version" integer DEFAULT 0 NOT NULL,
	"paused" boolean DEFAULT false NOT NULL,
	"paused_reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "apps_address_unique" UNIQUE("address")
);
--> statement-breakpoint
CREATE TABLE "apps"."blobs" (
	"sha256" text PRIMARY KEY NOT NULL,
	"size" bigint NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "apps"."confirm_uses" (
	"id" text PRIMARY KEY NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "apps"."daily_opens" (
	"app_id" text NOT NULL,
	"day" date NOT NULL,
	"opens" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "daily_opens_app_id_day_pk" PRIMARY KEY("app_id","day")
);
--> statement-breakpoint
CREATE TABLE "apps"."daily_viewers" (
	"app_id" text NOT NULL,
	"day" date NOT NULL,
	"viewer" text NOT NULL,
	CONSTRAINT "daily_viewers_app_id_day_viewer_pk" PRIMARY KEY("app_id","day","viewer")
);
--> statement-breakpoint
CREATE TABLE "apps"."uploads" (
	"token" text PRIMARY KEY NOT NULL,
	"sha256" text NOT NULL,
	"size" bigint NOT NULL,
	"user_id" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "apps"."version_files" (
	"app_id" text NOT NULL,
	"version" integer NOT NULL,
	"path" text NOT NULL,
	"sha256" text NOT NULL,
	"size" bigint NOT NULL,
	"content_type" text NOT NULL,
	CONSTRAINT "version_files_app_id_version_path_pk" PRIMARY KEY("app_id","version","path")
);
--> statement-breakpoint
CREATE TABLE "apps"."versions" (
	"app_id" text NOT NULL,
	"number" integer NOT NULL,
	"published_by" text NOT NULL,
	"publisher_email" text NOT NULL,
	"file_count" integer NOT NULL,
	"total_bytes" bigint NOT NULL,
	"config" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "versions_app_id_number_pk" PRIMARY KEY("app_id","number")
);
--> statement-breakpoint
ALTER TABLE "apps"."app_people" ADD CONSTRAINT "app_people_app_id_apps_id_fk" FOREIGN KEY ("app_id") REFERENCES "apps"."apps"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "apps"."apps" ADD CONSTRAINT "apps_address_addresses_address_fk" FOREIGN KEY ("address") REFERENCES "apps"."addresses"("address") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "apps"."daily_opens" ADD CONSTRAINT "daily_opens_app_id_apps_id_fk" FOREIGN KEY ("app_id") REFERENCES "apps"."apps"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "apps"."daily_viewers" ADD CONSTRAINT "daily_viewers_app_id_apps_id_fk" FOREIGN KEY ("app_id") REFERENCES "apps"."apps"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "apps"."versions" ADD CONSTRAINT "versions_app_id_apps_id_fk" FOREIGN KEY ("app_id") REFERENCES "apps"."apps"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "app_people_email" ON "apps"."app_people" USING btree ("email");--> statement-breakpoint
CREATE INDEX "apps_owner" ON "apps"."apps" USING btree ("owner_id");--> statement-breakpoint
CREATE INDEX "apps_account" ON "apps"."apps" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "version_files_sha" ON "apps"."version_files" USING btree ("sha256");