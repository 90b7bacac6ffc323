-- The box each tool execution's processes ran in: 'bubblewrap', 'landlock' or 'none' (no box), as the
-- worker reported it; NULL when no worker ran the request (it was never sent, or the coordinator failed
-- before asking) and for executions recorded before confinement existed. Set once, with the result.
ALTER TABLE tool_executions ADD COLUMN confinement TEXT
    CHECK (confinement IS NULL OR confinement IN ('bubblewrap', 'landlock', 'none'));

CREATE TRIGGER tool_executions_confinement_is_set_with_the_result
BEFORE UPDATE OF confinement ON tool_executions
WHEN OLD.confinement IS NOT NULL AND NEW.confinement IS NOT OLD.confinement
BEGIN
    SELECT RAISE(ABORT, 'an execution''s confinement is recorded once');
END;
