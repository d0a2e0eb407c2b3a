-- The service's schema exists from the start, so its migrations table and later tables have a home.
CREATE SCHEMA IF NOT EXISTS "apps";
