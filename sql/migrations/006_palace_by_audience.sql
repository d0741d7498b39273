-- 006: a one-off relocation of what the palace filed under the old rule.
--
-- Until 2026-11-28 the palace filed every item under the project it was said in; today an
-- item lives under its audience (`pipelines.palace.scope_domain`: an org-wide item under
-- the org, a user's own memory under the user). Consolidation locates only what changed
-- since its last run, so this marks the store for the relocation the next run makes, once
-- (`pipelines.consolidate.locations.build_palace`): every active item whose stored domain
-- today's rule places elsewhere is moved, then the relocation is recorded as done. A later
-- change of the domain rule marks this key 'pending' again in a migration of its own.
INSERT INTO ingest_state
SELECT 'palace_domains', 'pending', strftime(now() AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%f+00:00')
WHERE NOT EXISTS (SELECT 1 FROM ingest_state WHERE key = 'palace_domains');
