CREATE TABLE "apps"."bucket_files" (
	"id" text PRIMARY KEY NOT NULL,
	"app_id" text NOT NULL,
	"bucket" text NOT NULL,
	"name" text NOT NULL,
	"content_type" text NOT NULL,
	"size" bigint NOT NULL,
	"sha256" text NOT NULL,
	"created_by" text,
	"created_by_email" text,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "apps"."data_usage" (
	"app_id" text PRIMARY KEY NOT NULL,
	"documents" integer DEFAULT 0 NOT NULL,
	"files" integer DEFAULT 0 NOT NULL,
	"file_bytes" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "apps"."documents" (
	"app_id" text NOT NULL,
	"collection" text NOT NULL,
	"id" text NOT NULL,
	"data" jsonb NOT NULL,
	"bytes" integer NOT NULL,
	"created_by" text,
	"created_by_email" text,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "documents_app_id_collection_id_pk" PRIMARY KEY("app_id","collection","id")
);
--> statement-breakpoint
ALTER TABLE "apps"."bucket_files" ADD CONSTRAINT "bucket_files_app_id_apps_id_fk" FOREIGN KEY ("app_id") REFERENCES "apps"."apps"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "apps"."data_usage" ADD CONSTRAINT "data_usage_app_id_apps_id_fk" FOREIGN KEY ("app_id") REFERENCES "apps"."apps"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "apps"."documents" ADD CONSTRAINT "documents_app_id_apps_id_fk" FOREIGN KEY ("app_id") REFERENCES "apps"."apps"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "bucket_files_by_created" ON "apps"."bucket_files" USING btree ("app_id","bucket","created_at","id");--> statement-breakpoint
CREATE INDEX "bucket_files_sha" ON "apps"."bucket_files" USING btree ("sha256");--> statement-breakpoint
CREATE INDEX "documents_by_created" ON "apps"."documents" USING btree ("app_id","collection","created_at","id");--> statement-breakpoint
CREATE INDEX "documents_by_creator" ON "apps"."documents" USING btree ("app_id","collection","created_by","created_at","id");--> statement-breakpoint
CREATE INDEX "documents_data" ON "apps"."documents" USING gin ("data" jsonb_path_ops);