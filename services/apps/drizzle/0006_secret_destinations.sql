ALTER TABLE "apps"."secrets" ADD COLUMN "destinations" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
-- Secrets set before destinations were recorded go on working: each is bound to what the app's current version
-- declares for it (base url without trailing slashes, `in` or the default placement), as its owner last saw it.
UPDATE "apps"."secrets" AS s SET "destinations" = COALESCE((
  SELECT jsonb_agg(
    jsonb_build_object(
      'api', api.key,
      'url', regexp_replace(api.value->>'url', '/+$', ''),
      'in', COALESCE(api.value->'in', '{"header": "Authorization", "prefix": "Bearer "}'::jsonb)
    ) ORDER BY api.key)
  FROM "apps"."apps" AS a
  JOIN "apps"."versions" AS v ON v.app_id = a.id AND v.number = a.current_version
  CROSS JOIN LATERAL jsonb_each(
    CASE WHEN jsonb_typeof(v.config->'apis') = 'object' THEN v.config->'apis' ELSE '{}'::jsonb END
  ) AS api
  WHERE a.id = s.app_id AND api.value->>'secret' = s.name
), '[]'::jsonb);
