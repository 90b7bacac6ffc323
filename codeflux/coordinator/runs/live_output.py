"""Live output of a running command: committed ``tool-output`` events the UI shows while it runs.

The worker streams a command's output; :class:`WorkerHandle.execute` hands each chunk to ``on_output``
already redacted by a streaming redactor (a secret split across chunks is still caught, exact loaded
secrets included). :class:`LiveOutput` coalesces those chunks and commits them as ``tool-output`` events
on the task's session — committed before anyone sees them, like every event — at most every
:data:`FLUSH_SECONDS` (a timer flushes a quiet command's last line) or every :data:`FLUSH_CHARS`, and at
most :data:`LIMIT_CHARS` per stream: past that one event says the live view stopped and the final result
(capped and redacted separately) holds the output. The payload is
``{request_id, execution_id, stream, text, offset}`` with ``offset`` the character offset of ``text``
in that stream. A command that prints nothing writes nothing (the authority benchmark's ``true``).

Live output is a convenience, not a record: the execution's stored result is the truth. A failed event
commit is logged and the live view stops; it never fails the command.
"""

from __future__ import annotations

import threading
from typing import Final

from codeflux.domain.events import ToolOutput
from codeflux.domain.ids import ToolRequestId
from codeflux.logs import get_logger
from codeflux.store.database import Database, Transaction
from codeflux.store.events import append_event

__all__ = ["FLUSH_CHARS", "FLUSH_SECONDS", "LIMIT_CHARS", "LiveOutput"]

FLUSH_SECONDS: Final = 0.1  # with the redactor releasing at once, a quiet tail is committed within 0.1 s
FLUSH_CHARS: Final = 8 * 1024
LIMIT_CHARS: Final = 64 * 1024

_log = get_logger("coordinator.live_output")


class LiveOutput:
    """The ``on_output`` callback of one execution (see the module docstring). Call :meth:`close` at the end."""

    def __init__(self, db: Database, *, session_id: str, request_id: str, execution_id: str) -> None:
        self._db, self._session_id = db, session_id
        self._ids = {"request_id": request_id, "execution_id": execution_id}
        self._request_id = ToolRequestId.parse(request_id)
        self._lock = threading.Lock()
        self._pending: dict[str, str] = {}
        self._sent: dict[str, int] = {}
        self._timer: threading.Timer | None = None
        self._stopped = False

    def __call__(self, stream: str, text: str) -> None:
        if not text:
            return
        with self._lock:
            if self._stopped:
                return
            self._pending[stream] = self._pending.get(stream, "") + text
            if sum(len(t) for t in self._pending.values()) >= FLUSH_CHARS:
                self._flush_locked()
            elif self._timer is None:
                self._timer = threading.Timer(FLUSH_SECONDS, self._flush_from_timer)
                self._timer.daemon = True
                self._timer.start()

    def close(self) -> None:
        """Commit what is still buffered; nothing is committed after this returns."""
        with self._lock:
            self._flush_locked()
            self._stopped = True

    def _flush_from_timer(self) -> None:
        with self._lock:
            self._timer = None
            if not self._stopped:
                self._flush_locked()

    def _flush_locked(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, {}
        payloads: list[ToolOutput] = []
        for stream, text in pending.items():
            offset = self._sent.get(stream, 0)
            room = LIMIT_CHARS - offset
            if room <= 0:
                continue
            kept = text[:room]
            payloads.append(ToolOutput(request_id=self._request_id, execution_id=self._ids["execution_id"],
                                       stream=stream, text=kept, offset=offset))
            self._sent[stream] = offset + len(kept)
            if len(kept) < len(text):
                self._sent[stream] = LIMIT_CHARS + 1  # past the limit: one note, then nothing more
                payloads.append(ToolOutput(
                    request_id=self._request_id, execution_id=self._ids["execution_id"], stream=stream, text="",
                    offset=LIMIT_CHARS, stopped=f"live output stops after {LIMIT_CHARS} characters; the final "
                                                "result holds the (capped) output"))
        if not payloads:
            return

        def work(tx: Transaction) -> None:
            for payload in payloads:
                append_event(tx, session_id=self._session_id, event=payload)

        try:
            self._db.write(work)
        except Exception as error:  # live output must never fail the command
            self._stopped = True
            _log.warning("live_output.stopped", request_id=self._ids["request_id"], error=type(error).__name__)
