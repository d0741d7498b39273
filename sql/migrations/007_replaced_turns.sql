-- 007: a one-off backfill of the turns each correction replaced.
--
-- Since 2026-11-29 a claim that replaced others (its `supersedes` links) names, in its
-- metadata `replaced_turns`, the raw turns the claims it replaced were said in, and recall
-- marks those turns as said otherwise (`pipelines.recall.episodic.replaced_by`). The fold
-- names them as each correction arrives; a correction stored before names none, so its
-- old turns stayed unmarked. This marks the store for the backfill the next consolidation
-- run makes, once (`pipelines.consolidate.replaced_turns`): every active item with a
-- `supersedes` link gets the turns of what it superseded, then the backfill is recorded as
-- done. A new store is marked too: its backfill finds nothing to change.
INSERT INTO ingest_state
SELECT 'replaced_turns', 'pending', strftime(now() AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%f+00:00')
WHERE NOT EXISTS (SELECT 1 FROM ingest_state WHERE key = 'replaced_turns');
