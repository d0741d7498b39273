-- 005: a one-off sweep of what the store forgot before forgetting reached every copy.
--
-- Until 2026-11-28 forgetting a claim left the raw turns that said it unretracted (recall
-- left them out when it met the claim) and left the retrieval context of the turns next
-- to them, or next to a turn its speaker forgot, quoting them: searching the forgotten
-- words still found those neighbours. This marks the store for the sweep
-- (`pipelines.consolidate.forgetting_sweep`) the next consolidation run (or `loci
-- reembed`) makes, once, applying today's rule (`pipelines.forgetting.forget_turns`) to
-- everything forgotten so far; it then records the sweep as done. A new store is marked
-- too: its sweep finds nothing to change.
INSERT INTO ingest_state
SELECT 'forgetting_sweep', 'pending', strftime(now() AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%f+00:00')
WHERE NOT EXISTS (SELECT 1 FROM ingest_state WHERE key = 'forgetting_sweep');
