CREATE TABLE "apps"."ai_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"owner_id" text NOT NULL,
	"app_id" text,
	"provider" text NOT NULL,
	"key_id" text NOT NULL,
	"sealed" text NOT NULL,
	"added_by" text NOT NULL,
	"added_by_email" text NOT NULL,
	"added_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "apps"."app_logs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"app_id" text NOT NULL,
	"at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"level" text NOT NULL,
	"message" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "apps"."secrets" (
	"app_id" text NOT NULL,
	"name" text NOT NULL,
	"key_id" text NOT NULL,
	"sealed" text NOT NULL,
	"updated_by" text NOT NULL,
	"updated_by_email" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "secrets_app_id_name_pk" PRIMARY KEY("app_id","name")
);
--> statement-breakpoint
ALTER TABLE "apps"."apps" ADD COLUMN "ai_choice" text DEFAULT 'none' NOT NULL;--> statement-breakpoint
ALTER TABLE "apps"."apps" ADD COLUMN "ai_payer_id" text;--> statement-breakpoint
ALTER TABLE "apps"."ai_keys" ADD CONSTRAINT "ai_keys_app_id_apps_id_fk" FOREIGN KEY ("app_id") REFERENCES "apps"."apps"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "apps"."app_logs" ADD CONSTRAINT "app_logs_app_id_apps_id_fk" FOREIGN KEY ("app_id") REFERENCES "apps"."apps"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "apps"."secrets" ADD CONSTRAINT "secrets_app_id_apps_id_fk" FOREIGN KEY ("app_id") REFERENCES "apps"."apps"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "ai_keys_owner_provider" ON "apps"."ai_keys" USING btree ("scope","owner_id","provider");--> statement-breakpoint
CREATE INDEX "app_logs_by_app" ON "apps"."app_logs" USING btree ("app_id","id");