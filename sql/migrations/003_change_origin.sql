-- 003: who asked for each change, and when.
--
-- A change that comes from the inbox (an update, a retraction, a link, a created item, or
-- an attempt that was refused) records the caller's user id (`actor`), the inbox event's
-- sequence number (`inbox_seq`) and the time the caller asked (`requested_at`, the inbox
-- event's time); `events.at` and `revisions.changed_at` stay the time of the warehouse
-- write. A NULL actor is the pipeline's own work (merges, promotion, aging, palace).
ALTER TABLE events ADD COLUMN actor VARCHAR;
ALTER TABLE events ADD COLUMN requested_at VARCHAR;
ALTER TABLE revisions ADD COLUMN actor VARCHAR;
ALTER TABLE revisions ADD COLUMN inbox_seq BIGINT;
ALTER TABLE revisions ADD COLUMN requested_at VARCHAR;
