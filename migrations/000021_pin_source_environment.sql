-- A task's provider pin may say the choice came from the environment (issue 21 item 4): `CODEFLUX_PROVIDER` in
-- `codeflux start`'s environment (or `codeflux run`'s) was recorded as the `start --provider` flag it stands for,
-- because the `source` CHECK of task_provider_pins (000018) named only 'flag', 'demo', 'settings', 'config' and
-- 'default'. It now also allows 'environment' (codeflux/domain/providers.py ChoiceSource). Pins recorded before
-- keep their source ('flag' for an environment choice too: what was in force then is not known any better).
--
-- SQLite changes a CHECK constraint only by rebuilding the table: create the new shape, copy every row unchanged,
-- drop the old table, rename. No other table references task_provider_pins and no trigger of another table names
-- it, so foreign keys stay on (the copied rows reference existing tasks). The immutability trigger went with the old
-- table and is created again exactly as in 000018.

CREATE TABLE task_provider_pins_rebuilt (
    task_id TEXT PRIMARY KEY REFERENCES tasks (id),
    provider TEXT NOT NULL CHECK (provider IN ('scripted', 'anthropic', 'openai', 'openai-compatible')),
    cheap_model TEXT NOT NULL CHECK (length(cheap_model) <= 128),
    capable_model TEXT NOT NULL CHECK (length(capable_model) <= 128),
    base_url TEXT NOT NULL CHECK (length(base_url) <= 2048),
    uses_key INTEGER NOT NULL CHECK (uses_key IN (0, 1)),
    source TEXT NOT NULL CHECK (source IN ('flag', 'environment', 'demo', 'settings', 'config', 'default')),
    pinned_at_us INTEGER NOT NULL,
    CHECK ((provider = 'scripted') = (cheap_model = '')),
    CHECK (base_url = '' OR provider = 'openai-compatible'),
    CHECK (uses_key = 1 OR provider = 'openai-compatible')
) STRICT;

INSERT INTO task_provider_pins_rebuilt (task_id, provider, cheap_model, capable_model, base_url, uses_key, source,
                                        pinned_at_us)
SELECT task_id, provider, cheap_model, capable_model, base_url, uses_key, source, pinned_at_us
FROM task_provider_pins;

DROP TABLE task_provider_pins;

ALTER TABLE task_provider_pins_rebuilt RENAME TO task_provider_pins;

CREATE TRIGGER task_provider_pins_are_immutable
BEFORE UPDATE ON task_provider_pins
BEGIN
    SELECT RAISE(ABORT, 'a task''s provider pin never changes');
END;
