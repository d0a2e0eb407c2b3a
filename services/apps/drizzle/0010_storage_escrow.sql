CREATE TABLE "apps"."storage_escrow" (
	"account_id" text NOT NULL,
	"shard" smallint NOT NULL,
	"allowed" bigint DEFAULT 0 NOT NULL,
	"used" bigint DEFAULT 0 NOT NULL,
	"limit_bytes" bigint NOT NULL,
	CONSTRAINT "storage_escrow_account_id_shard_pk" PRIMARY KEY("account_id","shard")
);
