CREATE TABLE "heartbeats" (
	"minute" timestamp with time zone PRIMARY KEY NOT NULL
);
