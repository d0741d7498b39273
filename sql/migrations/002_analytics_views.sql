-- 002: analytics views over memory tiers, growth, policy outcomes and consolidation runs.
-- "Active" means neither archived nor superseded. Days are UTC dates (times are UTC text).

-- Active items per tier, type and scope kind.
CREATE VIEW v_items_by_tier_type_scope AS
SELECT
    tier,
    type,
    scope_kind,
    count(*)                         AS items,
    round(avg(confidence), 3)        AS avg_confidence,
    round(avg(importance), 2)        AS avg_importance,
    sum(usage_count)                 AS total_usage
FROM items
WHERE NOT archived AND superseded_by IS NULL
GROUP BY tier, type, scope_kind;

-- Every item per tier and life state (active / superseded / archived).
CREATE VIEW v_tier_summary AS
SELECT
    tier,
    count(*) FILTER (WHERE NOT archived AND superseded_by IS NULL) AS active,
    count(*) FILTER (WHERE superseded_by IS NOT NULL)              AS superseded,
    count(*) FILTER (WHERE archived)                               AS archived,
    count(*)                                                       AS total
FROM items
GROUP BY tier;

-- Items created per UTC day and tier, with the running total per tier.
CREATE VIEW v_item_growth_daily AS
WITH per_day AS (
    SELECT CAST(left(created_at, 10) AS DATE) AS day, tier, count(*) AS items_created
    FROM items
    GROUP BY 1, 2
)
SELECT
    day,
    tier,
    items_created,
    sum(items_created) OVER (PARTITION BY tier ORDER BY day) AS items_total
FROM per_day;

-- Tier changes seen in the revision history (promotions and demotions) per day.
CREATE VIEW v_tier_transitions_daily AS
WITH ordered AS (
    SELECT
        item_id,
        changed_at,
        snapshot ->> 'tier' AS tier,
        lag(snapshot ->> 'tier') OVER (PARTITION BY item_id ORDER BY revision_num) AS prev_tier
    FROM revisions
)
SELECT
    CAST(left(changed_at, 10) AS DATE) AS day,
    prev_tier                          AS from_tier,
    tier                               AS to_tier,
    count(*)                           AS items
FROM ordered
WHERE prev_tier IS NOT NULL AND prev_tier <> tier
GROUP BY 1, 2, 3;

-- Proposals per policy version, verdict action and rule ('(none)' when no rule fired).
CREATE VIEW v_policy_outcomes AS
WITH per_rule AS (
    SELECT
        policy_version,
        action,
        unnest(CASE WHEN len(rule_ids) = 0 THEN ['(none)'] ELSE rule_ids END) AS rule_id
    FROM proposals
)
SELECT policy_version, action, rule_id, count(*) AS proposals
FROM per_rule
GROUP BY policy_version, action, rule_id;

-- Verdict actions per policy version with their share of that version's proposals.
CREATE VIEW v_policy_actions AS
SELECT
    policy_version,
    action,
    count(*) AS proposals,
    round(count(*) / sum(count(*)) OVER (PARTITION BY policy_version), 4) AS share
FROM proposals
GROUP BY policy_version, action;

-- Proposals per UTC day, action and proposal form (tool_call / json_block / narrated / api).
CREATE VIEW v_policy_outcomes_daily AS
SELECT CAST(left("at", 10) AS DATE) AS day, action, form, count(*) AS proposals
FROM proposals
GROUP BY 1, 2, 3;

-- Merges per consolidation run: supersede events written while the run was open.
CREATE VIEW v_merges_per_run AS
SELECT
    r.run_id,
    count(e.id)                          AS superseded_items,
    count(DISTINCT e.details ->> 'new_id') AS canonical_items
FROM consolidation_runs r
LEFT JOIN events e
    ON e.action = 'supersede'
   AND CAST(e.at AS TIMESTAMPTZ) >= CAST(r.started_at AS TIMESTAMPTZ)
   AND CAST(e.at AS TIMESTAMPTZ) <= coalesce(CAST(r.finished_at AS TIMESTAMPTZ), now())
GROUP BY r.run_id;

-- Consolidation run history, newest first in queries (ORDER BY started_at DESC).
CREATE VIEW v_consolidation_runs AS
SELECT
    r.run_id,
    r.status,
    r.started_at,
    r.finished_at,
    date_diff('millisecond', CAST(r.started_at AS TIMESTAMPTZ), CAST(r.finished_at AS TIMESTAMPTZ))
        / 1000.0                                     AS duration_s,
    r.inbox_from_seq,
    r.inbox_to_seq,
    r.inbox_to_seq - r.inbox_from_seq                AS inbox_events,
    r.snapshot_version,
    r.counts,
    coalesce(m.superseded_items, 0)                  AS superseded_items,
    coalesce(m.canonical_items, 0)                   AS canonical_items
FROM consolidation_runs r
LEFT JOIN v_merges_per_run m USING (run_id);

-- Audit events per UTC day and action.
CREATE VIEW v_audit_actions_daily AS
SELECT CAST(left("at", 10) AS DATE) AS day, action, count(*) AS events
FROM events
GROUP BY 1, 2;

-- Embedding coverage of active items per stored model: current, stale (content changed
-- since it was embedded) and missing.
CREATE VIEW v_embedding_coverage AS
WITH models AS (
    SELECT DISTINCT model_name FROM embeddings
),
active AS (
    SELECT id, content_hash FROM items WHERE NOT archived AND superseded_by IS NULL
)
SELECT
    m.model_name,
    count(*)                                                              AS active_items,
    count(*) FILTER (WHERE e.content_hash = a.content_hash)               AS current,
    count(*) FILTER (WHERE e.item_id IS NOT NULL
                       AND e.content_hash <> a.content_hash)              AS stale,
    count(*) FILTER (WHERE e.item_id IS NULL)                             AS missing
FROM models m
CROSS JOIN active a
LEFT JOIN embeddings e ON e.item_id = a.id AND e.model_name = m.model_name
GROUP BY m.model_name;

-- Active items per palace domain and room.
CREATE VIEW v_palace_rooms AS
SELECT p.domain, p.room, count(*) AS items, count(DISTINCT p.shelf) AS shelves
FROM palace_locations p
JOIN items i ON i.id = p.item_id
WHERE NOT i.archived AND i.superseded_by IS NULL
GROUP BY p.domain, p.room;

-- Ingestion watermark and landed inbox events per kind.
CREATE VIEW v_ingest_status AS
SELECT
    l.kind,
    count(*)                                                        AS landed_events,
    max(l.seq)                                                      AS max_seq,
    (SELECT CAST(value AS BIGINT) FROM ingest_state WHERE key = 'inbox_seq') AS last_ingested_seq
FROM landed_events l
GROUP BY l.kind;
