-- A task pins the provider choice it was created with (issue 20 item 6): one row per task, written in the
-- transaction that creates the task, read at each plan draft and run start of that task instead of the choice in
-- force then. `source` says why that choice was in force ('flag', 'demo', 'settings', 'config', 'default':
-- codeflux/coordinator/spending/provider_choice.py ChoiceSource). `base_url` is the normalized endpoint of an
-- openai-compatible provider ('' otherwise; a non-default endpoint still needs its approval before a call) and
-- `uses_key` 0 for an openai-compatible server that takes no key. No key is ever stored here.
-- Tasks created before this migration have no row and keep the old behaviour. Rows never change.

CREATE TABLE task_provider_pins (
    task_id TEXT PRIMARY KEY REFERENCES tasks (id),
    provider TEXT NOT NULL CHECK (provider IN ('scripted', 'anthropic', 'openai', 'openai-compatible')),
    cheap_model TEXT NOT NULL CHECK (length(cheap_model) <= 128),
    capable_model TEXT NOT NULL CHECK (length(capable_model) <= 128),
    base_url TEXT NOT NULL CHECK (length(base_url) <= 2048),
    uses_key INTEGER NOT NULL CHECK (uses_key IN (0, 1)),
    source TEXT NOT NULL CHECK (source IN ('flag', 'demo', 'settings', 'config', 'default')),
    pinned_at_us INTEGER NOT NULL,
    CHECK ((provider = 'scripted') = (cheap_model = '')),
    CHECK (base_url = '' OR provider = 'openai-compatible'),
    CHECK (uses_key = 1 OR provider = 'openai-compatible')
) STRICT;

CREATE TRIGGER task_provider_pins_are_immutable
BEFORE UPDATE ON task_provider_pins
BEGIN
    SELECT RAISE(ABORT, 'a task''s provider pin never changes');
END;
