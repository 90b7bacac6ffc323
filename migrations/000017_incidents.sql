-- Incidents: reported failures (a traceback or a log excerpt), fingerprinted per repository (issue 22;
-- codeflux/domain/incidents.py says what the fingerprint is made of).
--
-- incidents holds one row per (repository, fingerprint) with what the fingerprint was made of (exception type,
-- the repository's own frames as JSON [[path, function], …], the normalised message). incident_occurrences holds
-- every report of it: the text as REDACTED before it was stored (never the raw text), where it came from and
-- when. incident_states holds every state the incident entered, numbered 1, 2, … without gaps, the first one
-- 'new': the reason, who decided, and the task it names (the task proposed, or the task whose fix regressed).
-- All three are facts: they refuse UPDATE and DELETE. An incident's state and occurrence count are read from them.

CREATE TABLE incidents (
    id TEXT PRIMARY KEY CHECK (id GLOB 'inc_?*' AND length(id) BETWEEN 12 AND 68
                               AND substr(id, 5) NOT GLOB '*[^0-9a-z]*'),
    repository_id TEXT NOT NULL REFERENCES repositories (id),
    fingerprint TEXT NOT NULL CHECK (length(fingerprint) = 64 AND fingerprint NOT GLOB '*[^0-9a-f]*'),
    shape TEXT NOT NULL CHECK (shape IN ('traceback', 'log')),
    exception_type TEXT NOT NULL CHECK (length(exception_type) BETWEEN 1 AND 512),
    frames_json TEXT NOT NULL CHECK (json_valid(frames_json) AND json_type(frames_json) = 'array'
                                     AND length(frames_json) <= 65536),
    message TEXT NOT NULL CHECK (length(message) <= 1024),
    created_at_us INTEGER NOT NULL,
    UNIQUE (repository_id, fingerprint)
) STRICT;

CREATE INDEX incidents_newest_first ON incidents (created_at_us DESC, id DESC);

CREATE TRIGGER incidents_are_immutable
BEFORE UPDATE ON incidents
BEGIN
    SELECT RAISE(ABORT, 'incidents are immutable');
END;

CREATE TRIGGER incidents_are_never_deleted
BEFORE DELETE ON incidents
BEGIN
    SELECT RAISE(ABORT, 'incidents are never deleted');
END;

CREATE TABLE incident_occurrences (
    id INTEGER PRIMARY KEY,
    incident_id TEXT NOT NULL REFERENCES incidents (id),
    source TEXT NOT NULL CHECK (source IN ('cli', 'browser', 'watch')),
    redacted_text TEXT NOT NULL CHECK (length(redacted_text) BETWEEN 1 AND 524288),
    reported_at_us INTEGER NOT NULL
) STRICT;

CREATE INDEX incident_occurrences_by_incident ON incident_occurrences (incident_id, id);

CREATE TRIGGER incident_occurrences_are_immutable
BEFORE UPDATE ON incident_occurrences
BEGIN
    SELECT RAISE(ABORT, 'incident occurrences are immutable');
END;

CREATE TRIGGER incident_occurrences_are_never_deleted
BEFORE DELETE ON incident_occurrences
BEGIN
    SELECT RAISE(ABORT, 'incident occurrences are never deleted');
END;

CREATE TABLE incident_states (
    incident_id TEXT NOT NULL REFERENCES incidents (id),
    sequence INTEGER NOT NULL CHECK (sequence >= 1),
    state TEXT NOT NULL CHECK (state IN ('new', 'task-proposed', 'fixed', 'regressed', 'dismissed')),
    actor TEXT NOT NULL CHECK (actor IN ('user', 'headless-policy', 'system')),
    reason TEXT NOT NULL CHECK (length(reason) BETWEEN 1 AND 2048),
    task_id TEXT REFERENCES tasks (id),
    recorded_at_us INTEGER NOT NULL,
    PRIMARY KEY (incident_id, sequence),
    CHECK ((sequence = 1) = (state = 'new'))
) STRICT;

CREATE TRIGGER incident_states_are_contiguous
BEFORE INSERT ON incident_states
WHEN NEW.sequence != (SELECT COALESCE(MAX(sequence), 0) + 1 FROM incident_states WHERE incident_id = NEW.incident_id)
BEGIN
    SELECT RAISE(ABORT, 'incident states are numbered 1, 2, … without gaps');
END;

CREATE TRIGGER incident_states_are_immutable
BEFORE UPDATE ON incident_states
BEGIN
    SELECT RAISE(ABORT, 'incident states are immutable');
END;

CREATE TRIGGER incident_states_are_never_deleted
BEFORE DELETE ON incident_states
BEGIN
    SELECT RAISE(ABORT, 'incident states are never deleted');
END;
