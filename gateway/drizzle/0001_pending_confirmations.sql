CREATE TABLE "gateway"."pending_confirmations" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"grant_id" text NOT NULL,
	"client_kind" text NOT NULL,
	"client_name" text NOT NULL,
	"service" text NOT NULL,
	"tool" text NOT NULL,
	"input" jsonb NOT NULL,
	"message" text NOT NULL,
	"schema" json NOT NULL,
	"confirm_token" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"state" text DEFAULT 'pending' NOT NULL,
	"result" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"decided_at" timestamp with time zone,
	CONSTRAINT "pending_confirmations_state" CHECK ("gateway"."pending_confirmations"."state" in ('pending', 'confirmed', 'cancelled'))
);
--> statement-breakpoint
ALTER TABLE "gateway"."pending_confirmations" ADD CONSTRAINT "pending_confirmations_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "gateway"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "gateway"."pending_confirmations" ADD CONSTRAINT "pending_confirmations_grant_id_grants_id_fk" FOREIGN KEY ("grant_id") REFERENCES "gateway"."grants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "pending_confirmations_expires" ON "gateway"."pending_confirmations" USING btree ("expires_at");