-- 008: the store's id, named in every snapshot it publishes.
--
-- Two consolidations with two warehouses (two data folders) publishing into one snapshots
-- folder would take turns replacing each other's snapshots under the replicas. Each
-- warehouse gets a random id once (an existing one when it migrates); a snapshot's manifest
-- carries it, and publishing into a folder that holds another store's snapshots is refused
-- (`pipelines.snapshot.versions.check_folder_store`), as is a replica's swap to one.
INSERT INTO ingest_state
SELECT 'store_id', CAST(uuid() AS VARCHAR), strftime(now() AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%f+00:00')
WHERE NOT EXISTS (SELECT 1 FROM ingest_state WHERE key = 'store_id');
