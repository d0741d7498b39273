-- 004: what a revision says, as one hash.
--
-- `text_hash` names the text an item had at a revision (its content hash, tags and
-- entities: what the write policy reads). The policy check of a run compares it across the
-- revisions written since the last checked run, so a revision that keeps the text
-- (promotion, palace, usage, aging) costs a short column read instead of decoding the
-- revision's JSON. Revisions written before this migration have none (NULL): they are
-- compared by their JSON, as before.
ALTER TABLE revisions ADD COLUMN text_hash VARCHAR;
