-- A task's provider pin keeps the endpoint of an anthropic or openai choice too (issue 20 item 6): `codeflux start
-- --provider anthropic --base-url https://proxy.example.com/v1` (or CODEFLUX_BASE_URL, or the config file's
-- base_url) pinned the provider and its models but not the endpoint, because the CHECK of task_provider_pins
-- (000018, 000021) let only openai-compatible keep a base URL — so the task's plan drafts and runs called the
-- provider's default endpoint, not the one the person started codeflux with. A base URL is now kept for every
-- provider but the scripted one ('' still means the provider's default endpoint); "no key" stays openai-compatible's
-- alone. Pins recorded before keep '' (which endpoint was in force then is not known any better).
--
-- SQLite changes a CHECK constraint only by rebuilding the table, as 000021 did: create the new shape, copy every row
-- unchanged, drop the old table, rename, and create the immutability trigger again exactly as in 000018.

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
    CHECK (base_url = '' OR provider <> 'scripted'),
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
