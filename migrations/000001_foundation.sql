-- Foundation: settings, the per-session event journal, idempotency records, application logs and
-- provider credential references. Every table is STRICT; fact tables refuse UPDATE by trigger.

CREATE TABLE settings (
    key TEXT PRIMARY KEY CHECK (length(key) BETWEEN 1 AND 128),
    value_json TEXT NOT NULL CHECK (json_valid(value_json)),
    revision INTEGER NOT NULL DEFAULT 0 CHECK (revision >= 0),
    created_at_us INTEGER NOT NULL,
    updated_at_us INTEGER NOT NULL,
    CHECK (updated_at_us >= created_at_us)
) STRICT;

-- A session is one stream of events the UI replays: one per thread, plus the "system" session that
-- carries maintenance events (credential stored, logs purged, ...).
CREATE TABLE sessions (
    id TEXT PRIMARY KEY CHECK (id GLOB 'ses_?*'),
    kind TEXT NOT NULL CHECK (kind IN ('system', 'thread')),
    current_sequence INTEGER NOT NULL DEFAULT 0 CHECK (current_sequence >= 0),
    created_at_us INTEGER NOT NULL
) STRICT;

CREATE TRIGGER sessions_sequence_advances_by_exactly_one
BEFORE UPDATE OF current_sequence ON sessions
WHEN NEW.current_sequence <> OLD.current_sequence + 1
BEGIN
    SELECT RAISE(ABORT, 'session sequence must advance by exactly one');
END;

CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    sequence INTEGER NOT NULL CHECK (sequence >= 1),
    kind TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 64),
    payload_version INTEGER NOT NULL DEFAULT 1 CHECK (payload_version >= 1),
    payload_json TEXT NOT NULL CHECK (json_valid(payload_json) AND json_type(payload_json) = 'object'),
    created_at_us INTEGER NOT NULL,
    PRIMARY KEY (session_id, sequence)
) STRICT, WITHOUT ROWID;

-- The writer bumps the session counter first, then inserts the event carrying the new value: a gap or
-- a duplicate is impossible under the single IMMEDIATE writer.
CREATE TRIGGER events_sequence_equals_session_counter
BEFORE INSERT ON events
WHEN NEW.sequence IS NOT (SELECT current_sequence FROM sessions WHERE id = NEW.session_id)
BEGIN
    SELECT RAISE(ABORT, 'event sequence must equal the session counter');
END;

CREATE TRIGGER events_are_immutable
BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are immutable');
END;

CREATE TRIGGER events_are_never_deleted
BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are never deleted');
END;

-- Identical retry returns the stored result; the same key with another request is a conflict.
CREATE TABLE idempotency_records (
    scope TEXT NOT NULL CHECK (length(scope) BETWEEN 1 AND 128),
    key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_sha256 TEXT NOT NULL CHECK (length(request_sha256) = 64),
    result_json TEXT NOT NULL CHECK (json_valid(result_json)),
    created_at_us INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER idempotency_records_are_immutable
BEFORE UPDATE ON idempotency_records
BEGIN
    SELECT RAISE(ABORT, 'idempotency records are immutable');
END;

-- Application logs: operational records only, already redacted. `logs purge` deletes from here and
-- nowhere else; evidence and events live in their own tables.
CREATE TABLE app_logs (
    id INTEGER PRIMARY KEY,
    at_us INTEGER NOT NULL,
    level TEXT NOT NULL CHECK (level IN ('debug', 'info', 'warning', 'error', 'critical')),
    event TEXT NOT NULL CHECK (length(event) BETWEEN 1 AND 200),
    fields_json TEXT NOT NULL CHECK (json_valid(fields_json) AND json_type(fields_json) = 'object')
) STRICT;

CREATE INDEX app_logs_by_time ON app_logs (at_us);

CREATE TRIGGER app_logs_are_immutable
BEFORE UPDATE ON app_logs
BEGIN
    SELECT RAISE(ABORT, 'application log records are immutable');
END;

-- Only the reference lives here; the key itself is in the OS credential store.
CREATE TABLE provider_credentials (
    provider TEXT PRIMARY KEY CHECK (provider IN ('anthropic', 'openai', 'openai-compatible')),
    credential_ref TEXT NOT NULL CHECK (credential_ref = 'os://codeflux-provider/' || provider),
    revision INTEGER NOT NULL DEFAULT 0 CHECK (revision >= 0),
    created_at_us INTEGER NOT NULL,
    updated_at_us INTEGER NOT NULL,
    CHECK (updated_at_us >= created_at_us)
) STRICT;

INSERT INTO sessions (id, kind, current_sequence, created_at_us)
VALUES ('ses_system', 'system', 0, CAST(unixepoch('subsec') * 1000000 AS INTEGER));
