"""Application logging: structlog to stderr, every string redacted, records optionally kept in SQLite.

Owns: the structlog configuration (a console renderer on a terminal, JSON lines otherwise), the
processor that runs every string of a record (the event, field names and values, nested values,
formatted tracebacks) through the one redaction pipeline, and the sink that hands each finished
record to a ``persist`` callback. The store layer supplies that callback (it writes ``app_logs``);
this module writes no SQL. Records from the standard ``logging`` module (libraries such as httpx)
are routed through the same chain, so nothing reaches stderr or the database unredacted.

May import: the standard library, ``structlog``, ``codeflux.redact`` and ``codeflux.domain``.
Importing this module configures nothing: call :func:`configure_logging`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, TextIO

import structlog
from structlog.typing import EventDict, FilteringBoundLogger, Processor, WrappedLogger

from codeflux.domain.errors import UsageError
from codeflux.redact import REDACTED, Redactor, default_redactor

__all__ = [
    "LogLevel",
    "LogRecord",
    "configure_logging",
    "get_logger",
    "reset_logging",
]

# Keys of record fields that the record itself stores with the event, not among the fields.
_RECORD_KEYS = frozenset({"event", "level", "at_us", "timestamp"})

# A field *named* like a credential is hidden whatever its value (a short password would slip past
# value matching). Name segments are matched whole, so `input_tokens` or `credential_ref` stay visible.
_SENSITIVE_FIELD = re.compile(
    r"(?:^|_)(?:password|passwd|secret|token|apikey|api_key|access_key|secret_key|private_key"
    r"|authorization|cookie)(?:_|$)"
)


class LogLevel(StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"

    @classmethod
    def parse(cls, text: str) -> LogLevel:
        try:
            return cls(text.lower())
        except ValueError:
            valid = ", ".join(level.value for level in cls)
            raise UsageError(f"unknown log level; choose one of: {valid}") from None

    @property
    def number(self) -> int:
        return int(logging.getLevelNamesMapping()[self.value.upper()])


@dataclass(frozen=True, slots=True, kw_only=True)
class LogRecord:
    """One application log record, already redacted, as the store keeps it (``app_logs``)."""

    level: str
    event: str
    fields_json: str
    at_us: int


@dataclass(slots=True)
class _BridgeSlot:
    """The standard-logging bridge this module installed on the root logger, if any."""

    bridge: logging.Handler | None = None
    previous_root_level: int = logging.WARNING


_bridge_slot = _BridgeSlot()
_bridge_lock = threading.Lock()


def configure_logging(
    *,
    level: str = "info",
    persist: Callable[[LogRecord], None] | None = None,
    stream: TextIO | None = None,
    renderer: Literal["auto", "console", "json"] = "auto",
    redactor: Redactor | None = None,
    clock_us: Callable[[], int] | None = None,
    console_level: str | None = None,
    colour: bool | None = None,
) -> None:
    """Configure structlog (and route standard ``logging``) for this process; calling it again reconfigures.

    - ``level``: the least severe level emitted and persisted (``debug`` … ``critical``).
    - ``persist``: called with each record after redaction (the store's ``app_logs`` writer); a
      failing callback never breaks the code that logged — one notice goes to ``stream`` instead.
    - ``stream``: where rendered lines go; standard error by default.
    - ``renderer``: ``auto`` picks the console renderer on a terminal and JSON lines otherwise.
    - ``redactor``: the pipeline every string passes through; the process-wide one by default.
    - ``clock_us``: microseconds since the epoch, for ``at_us``; the system clock by default.
    - ``console_level``: the least severe level rendered to ``stream`` (default: ``level``); records
      between ``level`` and it are persisted but not shown, so a CLI stays quiet on success.
    - ``colour``: whether rendered lines may carry ANSI colour; by default only on a terminal and never while
      ``NO_COLOR`` is set (https://no-color.org).
    """
    chosen_level = LogLevel.parse(level)
    output = stream if stream is not None else sys.stderr
    processors: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _Timestamp(clock_us or _system_clock_us),
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
        _RedactRecord(redactor if redactor is not None else default_redactor()),
    ]
    if persist is not None:
        processors.append(_PersistRecord(persist, notice_stream=output))
    if console_level is not None:
        processors.append(_DropBelow(LogLevel.parse(console_level)))
    if colour is None:
        colour = _is_terminal(output) and not os.environ.get("NO_COLOR")
    processors.append(_renderer(renderer, output, colour=colour))
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(chosen_level.number),
        logger_factory=structlog.PrintLoggerFactory(file=output),
        cache_logger_on_first_use=False,
    )
    _install_stdlib_bridge(chosen_level)


def reset_logging() -> None:
    """Undo :func:`configure_logging`: structlog defaults, and standard ``logging`` as it was before."""
    with _bridge_lock:
        if _bridge_slot.bridge is not None:
            root = logging.getLogger()
            root.removeHandler(_bridge_slot.bridge)
            root.setLevel(_bridge_slot.previous_root_level)
            _bridge_slot.bridge = None
    structlog.reset_defaults()


def get_logger(component: str) -> FilteringBoundLogger:
    """A logger whose records carry ``component`` (e.g. ``"store"``, ``"cli.provider"``)."""
    logger: FilteringBoundLogger = structlog.get_logger().bind(component=component)
    return logger


def _system_clock_us() -> int:
    return time.time_ns() // 1000


def _renderer(choice: Literal["auto", "console", "json"], stream: TextIO, *, colour: bool) -> Processor:
    console = choice == "console" or (choice == "auto" and _is_terminal(stream))
    if console:
        return structlog.dev.ConsoleRenderer(colors=colour, exception_formatter=structlog.dev.plain_traceback)
    return structlog.processors.JSONRenderer(sort_keys=True, ensure_ascii=False)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or the stream is closed
        return False


class _Timestamp:
    """Adds ``at_us`` (integer microseconds, for the store) and ``timestamp`` (ISO 8601 UTC, for people)."""

    def __init__(self, clock_us: Callable[[], int]) -> None:
        self._clock_us = clock_us

    def __call__(self, logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
        at_us = self._clock_us()
        event_dict["at_us"] = at_us
        seconds, micros = divmod(at_us, 1_000_000)  # integer parts: a float would round the microseconds
        moment = datetime.fromtimestamp(seconds, tz=UTC).replace(microsecond=micros)
        event_dict["timestamp"] = moment.isoformat(timespec="microseconds")
        return event_dict


class _RedactRecord:
    """Runs every string of the record through the redactor; other objects become redacted text.

    Anything that is not a plain JSON value is converted with ``repr`` *before* redaction, since a
    renderer would otherwise print its repr afterwards, unredacted. A ``Secret`` prints as
    ``[REDACTED]`` either way. Fields named like credentials are hidden whole.
    """

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor

    def __call__(self, logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
        return {self._redactor.redact(str(key)): self._field(str(key), value) for key, value in event_dict.items()}

    def _field(self, key: str, value: object) -> object:
        if key not in _RECORD_KEYS and _SENSITIVE_FIELD.search(key.lower().replace("-", "_")):
            return REDACTED
        return self._value(value)

    def _value(self, value: object) -> object:
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, str):
            return self._redactor.redact(value)
        if isinstance(value, Mapping):
            return {self._redactor.redact(str(k)): self._field(str(k), v) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self._value(item) for item in value]
        return self._redactor.redact(repr(value))


class _PersistRecord:
    """Hands the redacted record to ``persist``; a failure is reported once per failure, never raised.

    Logging is called from everywhere, so a full disk or a locked database must not turn a log call
    into a failed operation. A record logged while persisting (re-entry) is not persisted again.
    """

    def __init__(self, persist: Callable[[LogRecord], None], *, notice_stream: TextIO) -> None:
        self._persist = persist
        self._notice_stream = notice_stream
        self._active = threading.local()

    def __call__(self, logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
        if getattr(self._active, "busy", False):
            return event_dict
        record = LogRecord(
            level=str(event_dict.get("level", method_name)),
            event=str(event_dict.get("event", "")),
            fields_json=json.dumps(
                {key: value for key, value in event_dict.items() if key not in _RECORD_KEYS},
                sort_keys=True,
                ensure_ascii=False,
                default=str,
            ),
            at_us=int(event_dict.get("at_us", 0)),
        )
        self._active.busy = True
        try:
            self._persist(record)
        except Exception as exc:  # a process edge: logging must not fail the operation it records
            self._notice_stream.write(
                f"codeflux: a log record could not be saved to the database ({type(exc).__name__})\n"
            )
        finally:
            self._active.busy = False
        return event_dict


class _DropBelow:
    """Stops records less severe than ``level`` before they are rendered (they were persisted)."""

    def __init__(self, level: LogLevel) -> None:
        self._number = level.number

    def __call__(self, logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
        name = str(event_dict.get("level", method_name)).upper()
        if logging.getLevelNamesMapping().get(name, logging.INFO) < self._number:
            raise structlog.DropEvent
        return event_dict


class _StdlibBridge(logging.Handler):
    """Sends records of the standard ``logging`` module through the structlog chain."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a library's malformed %-format arguments
            message = str(record.msg)
        fields: dict[str, Any] = {"logger": record.name}
        if record.exc_info:
            fields["exc_info"] = record.exc_info
        structlog.get_logger().log(record.levelno, message, **fields)


def _install_stdlib_bridge(level: LogLevel) -> None:
    with _bridge_lock:
        root = logging.getLogger()
        if _bridge_slot.bridge is not None:
            root.removeHandler(_bridge_slot.bridge)
        else:
            _bridge_slot.previous_root_level = root.level
        _bridge_slot.bridge = _StdlibBridge(level=level.number)
        root.addHandler(_bridge_slot.bridge)
        root.setLevel(level.number)
