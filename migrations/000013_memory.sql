-- Memory: what codeflux learned about a repository, used only while it is applicable (docs/memory.md).
--
-- memory_entries holds each entry once: its kind, the text search matches, a structured body (a JSON object),
-- and what it was true of — the repository (its root commit), the toolchain (a JSON object of tool -> version and
-- its sha256), the dependency set (a sha256 over the dependency declarations) and the commit it was learned at.
-- memory_entry_sources lists the files it was derived from with their git blob hashes when it was made;
-- memory_entry_evidence the rows it came from (a stage-ledger row, a task, a decision, a coverage run …).
-- memory_edges are provenance between entries: `derived-from` (the dependent holds only because the source does:
-- invalidating the source quarantines the dependent) and `influenced-by` (the source shaped it: the dependent is
-- flagged for review). A pair of entries has one edge kind at most, never an edge to itself.
-- memory_entry_states holds each state an entry entered, numbered from 1 without gaps: the first is `active`;
-- `quarantined` is final (a quarantined entry never regains authority: only a new entry replaces it, naming it in
-- replaces_id). The newest row is the entry's state. Every table here is a fact table: no UPDATE, no DELETE.
-- memory_entry_text is the FTS5 index over entry text (rowid = memory_entries.rowid); it only proposes candidates.

CREATE TABLE memory_entries (
    id TEXT PRIMARY KEY CHECK (id GLOB 'mem_?*' AND length(id) BETWEEN 12 AND 68
                               AND substr(id, 5) NOT GLOB '*[^0-9a-z]*'),
    kind TEXT NOT NULL CHECK (kind IN ('repository-fact', 'reviewed-command', 'file-test-map', 'convention', 'atom')),
    text TEXT NOT NULL CHECK (length(text) BETWEEN 1 AND 4096),
    body_json TEXT NOT NULL CHECK (json_valid(body_json) AND json_type(body_json) = 'object'
                                   AND length(CAST(body_json AS BLOB)) <= 65536),
    root_commit TEXT NOT NULL CHECK (length(root_commit) IN (40, 64) AND root_commit NOT GLOB '*[^0-9a-f]*'),
    toolchain_json TEXT NOT NULL CHECK (json_valid(toolchain_json) AND json_type(toolchain_json) = 'object'
                                        AND length(CAST(toolchain_json AS BLOB)) <= 8192),
    toolchain_hash TEXT NOT NULL CHECK (length(toolchain_hash) = 64 AND toolchain_hash NOT GLOB '*[^0-9a-f]*'),
    dependency_hash TEXT NOT NULL CHECK (length(dependency_hash) = 64 AND dependency_hash NOT GLOB '*[^0-9a-f]*'),
    learned_at_commit TEXT NOT NULL CHECK (length(learned_at_commit) IN (40, 64)
                                           AND learned_at_commit NOT GLOB '*[^0-9a-f]*'),
    replaces_id TEXT REFERENCES memory_entries (id),
    created_at_us INTEGER NOT NULL
) STRICT;

CREATE INDEX memory_entries_by_repository ON memory_entries (root_commit, kind);

CREATE TABLE memory_entry_sources (
    entry_id TEXT NOT NULL REFERENCES memory_entries (id),
    path TEXT NOT NULL CHECK (length(path) BETWEEN 1 AND 4096 AND substr(path, 1, 1) <> '/'),
    blob_sha TEXT NOT NULL CHECK (length(blob_sha) IN (40, 64) AND blob_sha NOT GLOB '*[^0-9a-f]*'),
    PRIMARY KEY (entry_id, path)
) STRICT, WITHOUT ROWID;

CREATE TABLE memory_entry_evidence (
    entry_id TEXT NOT NULL REFERENCES memory_entries (id),
    evidence_kind TEXT NOT NULL CHECK (evidence_kind IN ('stage-ledger', 'task', 'decision', 'coverage',
                                                         'review', 'instruction-file')),
    evidence_ref TEXT NOT NULL CHECK (length(evidence_ref) BETWEEN 1 AND 256),
    PRIMARY KEY (entry_id, evidence_kind, evidence_ref)
) STRICT, WITHOUT ROWID;

CREATE TABLE memory_edges (
    dependent_id TEXT NOT NULL REFERENCES memory_entries (id),
    source_id TEXT NOT NULL REFERENCES memory_entries (id),
    kind TEXT NOT NULL CHECK (kind IN ('derived-from', 'influenced-by')),
    created_at_us INTEGER NOT NULL,
    PRIMARY KEY (dependent_id, source_id),
    CHECK (dependent_id <> source_id)
) STRICT, WITHOUT ROWID;

-- The cascade walks from a source to its dependents.
CREATE INDEX memory_edges_by_source ON memory_edges (source_id, kind, dependent_id);

CREATE TABLE memory_entry_states (
    id INTEGER PRIMARY KEY,
    entry_id TEXT NOT NULL REFERENCES memory_entries (id),
    sequence INTEGER NOT NULL CHECK (sequence >= 1),
    state TEXT NOT NULL CHECK (state IN ('active', 'needs-review', 'quarantined')),
    cause TEXT NOT NULL CHECK (cause IN ('learned', 'person', 'evidence-changed', 'derived-from-quarantined',
                                         'influenced-by-quarantined')),
    cause_entry_id TEXT REFERENCES memory_entries (id),
    reason TEXT NOT NULL CHECK (length(reason) BETWEEN 1 AND 1024),
    recorded_at_us INTEGER NOT NULL,
    UNIQUE (entry_id, sequence)
) STRICT;

-- A state follows the entry's newest one: the first is active (learned); nothing follows quarantined; a state never
-- repeats the one before it. With UNIQUE (entry_id, sequence) and every insert naming an existing predecessor, the
-- sequence has no gaps, so the predecessor is the newest row: one index lookup decides.
CREATE TRIGGER memory_entry_states_follow_in_order
BEFORE INSERT ON memory_entry_states
WHEN (NEW.sequence = 1 AND (NEW.state IS NOT 'active' OR NEW.cause IS NOT 'learned'))
  OR (NEW.sequence > 1 AND (NEW.cause IS 'learned' OR NOT EXISTS (
        SELECT 1 FROM memory_entry_states WHERE entry_id = NEW.entry_id AND sequence = NEW.sequence - 1
        AND state NOT IN ('quarantined', NEW.state))))
BEGIN
    SELECT RAISE(ABORT, 'a memory entry starts active and changes state one step at a time; quarantine is final');
END;

CREATE VIRTUAL TABLE memory_entry_text USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');

CREATE TRIGGER memory_entries_are_immutable BEFORE UPDATE ON memory_entries
BEGIN SELECT RAISE(ABORT, 'memory entries are immutable; a new entry replaces one'); END;
CREATE TRIGGER memory_entries_are_never_deleted BEFORE DELETE ON memory_entries
BEGIN SELECT RAISE(ABORT, 'memory entries are never deleted'); END;
CREATE TRIGGER memory_entry_sources_are_immutable BEFORE UPDATE ON memory_entry_sources
BEGIN SELECT RAISE(ABORT, 'memory entry sources are immutable'); END;
CREATE TRIGGER memory_entry_sources_are_never_deleted BEFORE DELETE ON memory_entry_sources
BEGIN SELECT RAISE(ABORT, 'memory entry sources are never deleted'); END;
CREATE TRIGGER memory_entry_evidence_is_immutable BEFORE UPDATE ON memory_entry_evidence
BEGIN SELECT RAISE(ABORT, 'memory entry evidence is immutable'); END;
CREATE TRIGGER memory_entry_evidence_is_never_deleted BEFORE DELETE ON memory_entry_evidence
BEGIN SELECT RAISE(ABORT, 'memory entry evidence is never deleted'); END;
CREATE TRIGGER memory_edges_are_immutable BEFORE UPDATE ON memory_edges
BEGIN SELECT RAISE(ABORT, 'memory edges are immutable'); END;
CREATE TRIGGER memory_edges_are_never_deleted BEFORE DELETE ON memory_edges
BEGIN SELECT RAISE(ABORT, 'memory edges are never deleted'); END;
CREATE TRIGGER memory_entry_states_are_immutable BEFORE UPDATE ON memory_entry_states
BEGIN SELECT RAISE(ABORT, 'memory entry states are immutable'); END;
CREATE TRIGGER memory_entry_states_are_never_deleted BEFORE DELETE ON memory_entry_states
BEGIN SELECT RAISE(ABORT, 'memory entry states are never deleted'); END;
