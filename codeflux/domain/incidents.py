"""Incidents: failures a person reports (a traceback or a log excerpt), recognised when they come back.

An incident is one **fingerprint** in one repository; each report of it is an occurrence. The fingerprint
is what makes two reports "the same failure" although they came from two runs, two machines or two days:

* the **exception type** (``ValueError``, ``pkg.errors.Refused``) of the last exception of a Python traceback;
* the repository's **own frames** as ``file:function``, outermost first: frames whose file is a file of the
  repository (matched by the longest tracked path its file name ends with, so ``/home/a/proj/pkg/m.py`` and
  ``/srv/ci/build/pkg/m.py`` are both ``pkg/m.py``; ``site-packages`` never counts), without line numbers; a run
  of identical frames (recursion) counts once, so the depth a recursion reached does not matter;
* the **message**, normalised by the ladder's failure normaliser
  (:func:`codeflux.domain.ladder.normalize_failure_text`: lowercased, paths, addresses, times and long numbers
  masked) and then with prefixed ids (``tsk_01h…``) and every remaining number masked.

Text that holds no Python traceback is a **log excerpt**: its first error-looking line (``error``,
``exception``, ``fatal``, ``panic``, ``failed``… — else its first non-blank line) is the message, and an
exception type is taken from it when it starts like one (``KeyError: …``), else ``log``.

States (every transition an immutable row; :func:`next_incident_state`)::

    new ──► task-proposed ──► fixed ──► regressed ──► task-proposed …
     │            │                         │
     └────────────┴──────► dismissed ◄──────┘

A proposed incident may be proposed again once its task was cancelled or rolled back (:func:`may_propose_again`).
``fixed`` is entered when an accepted task named the incident; the same fingerprint seen after that is
``regressed`` (naming the task whose fix regressed). ``dismissed`` is a person's decision with a reason; a
dismissed incident still counts its occurrences and stays dismissed (a person decided; nothing reopens it).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from codeflux.domain.errors import InvalidValueError, TransitionNotAllowedError
from codeflux.domain.ids import IncidentId, RepositoryId, TaskId
from codeflux.domain.ladder import normalize_failure_text
from codeflux.domain.tasks import Actor, TaskState

__all__ = [
    "MAX_INCIDENT_TEXT_CHARS",
    "Incident",
    "IncidentFingerprint",
    "IncidentOccurrence",
    "IncidentSource",
    "IncidentState",
    "IncidentStateEntry",
    "OwnFrame",
    "TextShape",
    "draft_incident_requirement",
    "fingerprint_incident",
    "incident_fingerprint_of",
    "may_propose_again",
    "next_incident_state",
    "normalize_incident_message",
    "parse_dismiss_reason",
    "state_after_occurrence",
]

# A report longer than this is refused: a traceback or a log excerpt, not a whole log file.
MAX_INCIDENT_TEXT_CHARS: Final = 262_144
_MAX_REASON: Final = 1024
_MAX_FRAMES: Final = 64
_MAX_TYPE: Final = 200


class IncidentState(StrEnum):
    """Where an incident stands (see the module docstring for the transitions)."""

    NEW = "new"
    TASK_PROPOSED = "task-proposed"
    FIXED = "fixed"
    REGRESSED = "regressed"
    DISMISSED = "dismissed"


class IncidentSource(StrEnum):
    """How an occurrence arrived."""

    CLI = "cli"  # codeflux incident report (stdin or --file)
    BROWSER = "browser"
    WATCH = "watch"


class TextShape(StrEnum):
    """What the reported text was read as."""

    TRACEBACK = "traceback"
    LOG = "log"


_TRANSITIONS: Final = frozenset({
    (IncidentState.NEW, IncidentState.TASK_PROPOSED),
    (IncidentState.NEW, IncidentState.DISMISSED),
    (IncidentState.TASK_PROPOSED, IncidentState.FIXED),
    (IncidentState.TASK_PROPOSED, IncidentState.DISMISSED),
    (IncidentState.FIXED, IncidentState.REGRESSED),
    (IncidentState.REGRESSED, IncidentState.TASK_PROPOSED),
    (IncidentState.REGRESSED, IncidentState.FIXED),
    (IncidentState.REGRESSED, IncidentState.DISMISSED),
})  # fmt: skip


def next_incident_state(current: IncidentState, to: IncidentState) -> IncidentState:
    """``to`` when an incident in ``current`` may enter it; :class:`TransitionNotAllowedError` otherwise."""
    if (current, to) not in _TRANSITIONS:
        raise TransitionNotAllowedError(machine="incident", from_state=current.value, to_state=to.value)
    return to


def may_propose_again(proposed_task_state: TaskState) -> bool:
    """Whether an incident in ``task-proposed`` may get another task: only once the task proposed ended without
    landing (cancelled or rolled back). While it is open, or after it was accepted, one proposal stands."""
    return proposed_task_state in (TaskState.CANCELLED, TaskState.ROLLED_BACK)


def state_after_occurrence(current: IncidentState) -> IncidentState | None:
    """The state a new occurrence moves an incident to: ``regressed`` after ``fixed``; otherwise none (the
    occurrence is counted and the state stays: a new, proposed, regressed or dismissed incident is still that)."""
    return IncidentState.REGRESSED if current is IncidentState.FIXED else None


def parse_dismiss_reason(text: str) -> str:
    """A person's reason for dismissing: one line (whitespace collapsed), 1..1024 characters."""
    reason = " ".join(text.split())
    if not reason:
        raise InvalidValueError(kind="reason", reason="say why the incident is dismissed (it is recorded)")
    if len(reason) > _MAX_REASON:
        raise InvalidValueError(kind="reason", reason=f"at most {_MAX_REASON} characters")
    return reason


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnFrame:
    """A frame in the repository's own code: its tracked path and function, never a line number."""

    path: str
    function: str

    def __str__(self) -> str:
        return f"{self.path}:{self.function}"


@dataclass(frozen=True, slots=True, kw_only=True)
class IncidentFingerprint:
    """What makes two reports the same incident; ``digest`` (sha256 hex) is the identity."""

    shape: TextShape
    exception_type: str
    frames: tuple[OwnFrame, ...]
    message: str
    digest: str

    @property
    def summary(self) -> str:
        """One line for lists: ``Type in file:function: message``."""
        where = f" in {self.frames[-1]}" if self.frames else ""
        message = f": {self.message}" if self.message else ""
        return f"{self.exception_type}{where}{message}"[:300]


_TRACEBACK_HEAD: Final = "Traceback (most recent call last):"
_FRAME: Final = re.compile(r'^\s*File "(?P<path>[^"\n]+)", line \d+, in (?P<function>\S+)')
_EXCEPTION_LINE: Final = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::[ \t]?(?P<message>.*))?$")
_LOG_EXCEPTION: Final = re.compile(r"(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure))"
                                   r"(?::[ \t]?(?P<message>.*))?")
_ERROR_LINE: Final = re.compile(r"\b(?:error|errors|exception|fatal|panic|panicked|critical|failed|failure|"
                                r"traceback|segmentation fault|abort(?:ed)?)\b", re.IGNORECASE)
_INSTALLED: Final = frozenset({"site-packages", "dist-packages"})
_PREFIXED_ID: Final = re.compile(r"\b[a-z]{2,8}_(?=[0-9a-z]*\d)[0-9a-z]{6,}\b")
_NUMBER: Final = re.compile(r"\d+")


def normalize_incident_message(text: str) -> str:
    """The ladder's normalisation, then prefixed ids and every number masked (a count or an id in a message
    varies between runs of the same failure)."""
    normalized = normalize_failure_text(text)
    return _NUMBER.sub("#", _PREFIXED_ID.sub("<id>", normalized))


def _own_path(raw: str, repository_files: frozenset[str]) -> str | None:
    parts = [part for part in raw.replace("\\", "/").split("/") if part not in ("", ".")]
    if _INSTALLED.intersection(parts):
        return None
    for start in range(len(parts)):
        candidate = "/".join(parts[start:])
        if candidate in repository_files:
            return candidate
    return None


def _last_traceback(lines: list[str]) -> list[str] | None:
    starts = [index for index, line in enumerate(lines) if _TRACEBACK_HEAD in line]
    return None if not starts else lines[starts[-1] + 1:]


def _traceback_parts(body: list[str], repository_files: frozenset[str]) -> tuple[str, tuple[OwnFrame, ...], str]:
    frames: list[OwnFrame] = []
    exception_type, message_lines = "", []
    for index, line in enumerate(body):
        frame = _FRAME.match(line)
        if frame is not None:
            path = _own_path(frame["path"], repository_files)
            own = None if path is None else OwnFrame(path=path, function=frame["function"])
            if own is not None and (not frames or frames[-1] != own):
                frames.append(own)
            continue
        if not line.strip() or line[:1].isspace():
            continue  # source lines, carets and blank lines between frames
        found = _EXCEPTION_LINE.match(line.strip())
        if found is None:
            continue
        exception_type = found["type"]
        message_lines = [found["message"] or ""]
        for more in body[index + 1:]:
            if not more.strip():
                break
            message_lines.append(more)
        break
    return exception_type or "Exception", tuple(frames[-_MAX_FRAMES:]), "\n".join(message_lines)


def _log_parts(lines: list[str]) -> tuple[str, str]:
    candidates = [line.strip() for line in lines if line.strip()]
    line = next((c for c in candidates if _ERROR_LINE.search(c)), candidates[0])
    found = _LOG_EXCEPTION.search(line)
    if found is not None and found["message"] is not None:
        return found["type"], found["message"]
    return "log", line


def fingerprint_incident(text: str, *, repository_files: frozenset[str]) -> IncidentFingerprint:
    """The fingerprint of a reported failure ``text`` in a repository whose tracked paths are
    ``repository_files`` (posix, relative to its root). Refuses blank text (:class:`InvalidValueError`)."""
    if not text.strip():
        raise InvalidValueError(kind="incident text", reason="it is empty; give a traceback or a log excerpt")
    if len(text) > MAX_INCIDENT_TEXT_CHARS:
        raise InvalidValueError(kind="incident text", reason=f"at most {MAX_INCIDENT_TEXT_CHARS} characters")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    body = _last_traceback(lines)
    if body is not None:
        shape = TextShape.TRACEBACK
        exception_type, frames, raw_message = _traceback_parts(body, repository_files)
    else:
        shape, frames = TextShape.LOG, ()
        exception_type, raw_message = _log_parts(lines)
    return incident_fingerprint_of(shape=shape, exception_type=exception_type[:_MAX_TYPE], frames=frames,
                                   message=normalize_incident_message(raw_message))


def incident_fingerprint_of(*, shape: TextShape, exception_type: str, frames: tuple[OwnFrame, ...],
                            message: str) -> IncidentFingerprint:
    """The fingerprint made of these parts (its digest is a sha256 over their canonical JSON)."""
    material = json.dumps(["incident/v1", shape.value, exception_type, [[f.path, f.function] for f in frames],
                           message], ensure_ascii=False, separators=(",", ":"))
    return IncidentFingerprint(shape=shape, exception_type=exception_type, frames=frames, message=message,
                               digest=hashlib.sha256(material.encode()).hexdigest())


@dataclass(frozen=True, slots=True, kw_only=True)
class IncidentStateEntry:
    """One state an incident entered (an immutable row): who, why, and the task it names, if any."""

    sequence: int
    state: IncidentState
    actor: Actor
    reason: str
    task_id: TaskId | None
    recorded_at_us: int


@dataclass(frozen=True, slots=True, kw_only=True)
class IncidentOccurrence:
    """One report of an incident: its text as redacted before it was stored, where it came from, when."""

    occurrence_id: int
    source: IncidentSource
    redacted_text: str
    reported_at_us: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Incident:
    """An incident as read back: its fingerprint in its repository, the current state (the newest state row)
    with when it was entered, how many occurrences were reported and when the first and last were."""

    incident_id: IncidentId
    repository_id: RepositoryId
    repository_root: str
    fingerprint: IncidentFingerprint
    created_at_us: int
    state: IncidentStateEntry
    occurrences: int
    first_seen_us: int
    last_seen_us: int


_EXCERPT_CHARS: Final = 4000


def draft_incident_requirement(incident: Incident, *, newest_text: str, check: str | None) -> str:
    """The requirement of the draft task proposed from ``incident``: what failed (fingerprint, own frames), the
    newest report's redacted text (cut to 4,000 characters) and the acceptance example — ``check``, the command
    that shows the failure, when the person named one; otherwise a test that reproduces it. It must fail before
    the change and pass after it."""
    fingerprint = incident.fingerprint
    seen = "once" if incident.occurrences == 1 else f"{incident.occurrences} times"
    frames = " → ".join(str(frame) for frame in fingerprint.frames) or "none in the repository's files"
    excerpt = newest_text if len(newest_text) <= _EXCERPT_CHARS else newest_text[-_EXCERPT_CHARS:]
    example = (f"`{check}` fails now with this failure and must pass after the change" if check
               else "a test that reproduces this failure fails before the change and passes after it")
    return (f"Fix the failure recorded as incident {incident.incident_id.value} (reported {seen}).\n\n"
            f"Failure: {fingerprint.exception_type}: {fingerprint.message}\n"
            f"Where (the repository's own frames, outermost first): {frames}\n\n"
            f"The newest report (redacted):\n\n```\n{excerpt.strip()}\n```\n\n"
            f"Acceptance example: {example}.\n")
