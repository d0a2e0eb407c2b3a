CREATE TABLE "gateway"."app_consents" (
	"user_id" text NOT NULL,
	"app_id" text NOT NULL,
	"owner_id" text NOT NULL,
	"address" text NOT NULL,
	"app_name" text NOT NULL,
	"owner_name" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "app_consents_user_id_app_id_pk" PRIMARY KEY("user_id","app_id")
);
--> statement-breakpoint
ALTER TABLE "gateway"."app_consents" ADD CONSTRAINT "app_consents_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "gateway"."users"("id") ON DELETE cascade ON UPDATE no action;