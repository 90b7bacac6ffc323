"""An internal error (a bug): one safe line for everyone, the whole traceback for whoever asks.

The line names the exception's class and where its traceback went: ``internal error (KeyError), logged as
42; run with --debug to see it``. The traceback, run through the one redaction pipeline (no loaded key and
no known key shape survives), is kept as an ``app_logs`` record (event ``cli.internal-error``; read it with
``codeflux inspect logs --id 42``) when the data directory has a current database. Without one nothing is
created just to hold it, and the line says so instead of naming an id. ``--debug`` (or ``CODEFLUX_DEBUG=1``)
also prints the redacted traceback on standard error.

:mod:`codeflux.cli.main` imports this module at every start, so the store and the redaction pipeline are imported
only on a bug's path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import codeflux
from codeflux.cli.context import CliContext
from codeflux.domain.errors import CodefluxError, DatabaseMissingError

__all__ = ["INTERNAL_ERROR_EVENT", "debug_requested", "report_internal_error", "without_debug_flag"]

INTERNAL_ERROR_EVENT = "cli.internal-error"


def debug_requested(arguments: Sequence[str], environ: Mapping[str, str]) -> bool:
    """``--debug`` before any ``--`` among the arguments, or ``CODEFLUX_DEBUG=1`` (also ``true``/``yes``)."""
    words = list(arguments)
    if "--" in words:
        words = words[: words.index("--")]
    return "--debug" in words or environ.get("CODEFLUX_DEBUG", "").strip().lower() in ("1", "true", "yes")


def without_debug_flag(arguments: Sequence[str]) -> list[str]:
    """The arguments without ``--debug`` before any ``--``: the flag is global and may follow a command's verb
    (``codeflux task list --debug``), where no verb's parser declares it."""
    words = list(arguments)
    end = words.index("--") if "--" in words else len(words)
    return [w for w in words[:end] if w != "--debug"] + words[end:]


def report_internal_error(ctx: CliContext, err: BaseException, *, command_name: str, debug: bool) -> None:
    """Keep the redacted traceback of ``err`` (when a database is there) and print the one line naming it."""
    import traceback  # noqa: PLC0415 (only on a bug's path: main imports this module at every start)

    from codeflux.redact import redact  # noqa: PLC0415

    text = redact("".join(traceback.format_exception(err)))
    name = type(err).__name__
    where = _keep(ctx, text, command=command_name, error_class=name)
    hint = "" if debug else "; run with --debug to see it"
    if debug:
        ctx.warn(text.rstrip("\n"))
    ctx.warn(f"{command_name}: internal error ({name}), {where}{hint}; this is a bug in codeflux "
             f"{codeflux.__version__}")


def _keep(ctx: CliContext, text: str, *, command: str, error_class: str) -> str:
    """Where the traceback went, as words for the message: ``logged as N`` or why it was not logged."""
    import json  # noqa: PLC0415 (as above)

    fields = json.dumps({"command": command, "error_class": error_class, "traceback": text,
                         "version": codeflux.__version__}, sort_keys=True, ensure_ascii=False)
    from codeflux.coordinator.maintenance import keep_app_log_record  # noqa: PLC0415 (as above)
    from codeflux.store.database import now_us  # noqa: PLC0415
    from codeflux.store.opening import open_store  # noqa: PLC0415

    try:
        location = ctx.location()
        with open_store(location, create=False, migrate=False) as db:
            record_id = keep_app_log_record(db, level="error", event=INTERNAL_ERROR_EVENT, fields_json=fields,
                                            at_us=now_us())
    except CodefluxError as refused:  # no database yet, one of another schema, an unusable data directory
        return f"not logged ({_why_not_logged(refused)})"
    except Exception as failed:  # a process edge: the report of one bug must not raise another
        return f"not logged (the log could not be written: {type(failed).__name__})"
    if record_id is None:
        return "not logged (another process held the database's write lock)"
    return f"logged as {record_id} (`codeflux inspect logs --id {record_id}`)"


def _why_not_logged(refused: CodefluxError) -> str:
    if isinstance(refused, DatabaseMissingError):
        return "this data directory has no database yet"
    return f"the database could not be opened: {type(refused).__name__}"
