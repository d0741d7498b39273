-- 001: the system-of-record tables of the warehouse.
--
-- Times are ISO-8601 UTC text (as produced by pipelines.records.utcnow), so records
-- round-trip unchanged; the analytics views cast them where they need dates.
-- Nothing here is ever deleted: updates write revisions, merges supersede (superseded_by),
-- expiry archives (archived = true), and every mutation appends to `events`.

-- Current state of every memory item (one row per item id).
CREATE TABLE items (
    id            VARCHAR PRIMARY KEY,
    tier          VARCHAR NOT NULL CHECK (tier IN ('stm', 'mtm', 'ltm')),
    type          VARCHAR NOT NULL,
    title         VARCHAR NOT NULL,
    content       VARCHAR NOT NULL,
    scope_kind    VARCHAR NOT NULL CHECK (scope_kind IN ('session', 'project', 'user', 'org')),
    user_id       VARCHAR NOT NULL,
    project_id    VARCHAR NOT NULL,
    session_id    VARCHAR NOT NULL,
    org_id        VARCHAR NOT NULL,
    tags          VARCHAR[] NOT NULL,
    entities      VARCHAR[] NOT NULL,
    provenance    JSON NOT NULL,
    confidence    DOUBLE NOT NULL,
    importance    INTEGER NOT NULL,
    validation    VARCHAR NOT NULL,
    valid_from    VARCHAR,
    valid_to      VARCHAR,
    created_at    VARCHAR NOT NULL,
    updated_at    VARCHAR NOT NULL,
    expires_at    VARCHAR,
    usage_count   INTEGER NOT NULL,
    last_used_at  VARCHAR,
    superseded_by VARCHAR,
    archived      BOOLEAN NOT NULL,
    content_hash  VARCHAR NOT NULL,
    metadata      JSON NOT NULL
);

-- Append-only history: the full item (JSON) after every write, numbered per item from 1.
CREATE TABLE revisions (
    revision_id  VARCHAR PRIMARY KEY,  -- '<item_id>#<revision_num>'
    item_id      VARCHAR NOT NULL,
    revision_num INTEGER NOT NULL,
    snapshot     JSON NOT NULL,
    changed_at   VARCHAR NOT NULL,
    reason       VARCHAR NOT NULL,
    UNIQUE (item_id, revision_num)
);

-- Derived vectors (float32), one per item and model; content_hash says which text was
-- embedded, so unchanged content is never embedded twice.
CREATE TABLE embeddings (
    item_id      VARCHAR NOT NULL,
    model_name   VARCHAR NOT NULL,
    dimension    INTEGER NOT NULL,
    vector       FLOAT[] NOT NULL,
    content_hash VARCHAR NOT NULL,
    created_at   VARCHAR NOT NULL,
    PRIMARY KEY (item_id, model_name)
);

-- Typed relations between items (the `links` of a MemoryItem are read from here).
CREATE TABLE links (
    src_id     VARCHAR NOT NULL,
    dst_id     VARCHAR NOT NULL,
    rel        VARCHAR NOT NULL,
    created_at VARCHAR NOT NULL,
    PRIMARY KEY (src_id, dst_id, rel)
);

-- Memory-palace address of an item: domain/room/shelf/card.
CREATE TABLE palace_locations (
    item_id     VARCHAR PRIMARY KEY,
    domain      VARCHAR NOT NULL,
    room        VARCHAR NOT NULL,
    shelf       VARCHAR NOT NULL,
    card        VARCHAR NOT NULL,
    assigned_at VARCHAR NOT NULL
);

-- Append-only audit log: one row per mutation, with the sha256 of the content it wrote.
CREATE SEQUENCE events_id_seq START 1;
CREATE TABLE events (
    id             BIGINT PRIMARY KEY DEFAULT nextval('events_id_seq'),
    action         VARCHAR NOT NULL,
    item_id        VARCHAR,
    details        JSON NOT NULL,
    content_sha256 VARCHAR NOT NULL,
    "at"             VARCHAR NOT NULL,
    inbox_seq      BIGINT
);

-- Captured chat turns landed from the inbox.
CREATE TABLE chat_turns (
    turn_id    VARCHAR PRIMARY KEY,
    event_id   VARCHAR,
    inbox_seq  BIGINT,
    user_id    VARCHAR NOT NULL,
    project_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    org_id     VARCHAR NOT NULL,
    role       VARCHAR NOT NULL,
    text       VARCHAR NOT NULL,
    turn_ref   VARCHAR,
    speaker    VARCHAR,
    "at"         VARCHAR NOT NULL
);

-- Governed proposals with their verdicts (accept / quarantine / reject).
CREATE TABLE proposals (
    proposal_id    VARCHAR PRIMARY KEY,
    event_id       VARCHAR,
    inbox_seq      BIGINT,
    turn_id        VARCHAR,
    user_id        VARCHAR,
    project_id     VARCHAR,
    session_id     VARCHAR,
    org_id         VARCHAR,
    form           VARCHAR NOT NULL,
    proposal       JSON NOT NULL,
    action         VARCHAR NOT NULL,
    reasons        VARCHAR[] NOT NULL,
    rule_ids       VARCHAR[] NOT NULL,
    policy_version VARCHAR NOT NULL,
    item_id        VARCHAR,
    "at"             VARCHAR NOT NULL
);

-- One row per consolidation run.
CREATE TABLE consolidation_runs (
    run_id           VARCHAR PRIMARY KEY,
    started_at       VARCHAR NOT NULL,
    finished_at      VARCHAR,
    status           VARCHAR NOT NULL,
    inbox_from_seq   BIGINT NOT NULL,
    inbox_to_seq     BIGINT,
    counts           JSON,
    snapshot_version VARCHAR
);

-- Small key/value state of ingestion (key 'inbox_seq' = last ingested inbox seq).
CREATE TABLE ingest_state (
    key        VARCHAR PRIMARY KEY,
    value      VARCHAR NOT NULL,
    updated_at VARCHAR NOT NULL
);

-- Inbox events already landed, so ingestion is idempotent by event id.
CREATE TABLE landed_events (
    event_id  VARCHAR PRIMARY KEY,
    seq       BIGINT NOT NULL,
    kind      VARCHAR NOT NULL,
    "at"        VARCHAR NOT NULL,
    landed_at VARCHAR NOT NULL
);
