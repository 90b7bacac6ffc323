"""Moving bytes between a running program and the worker: stdin in, stdout and stderr out, bounded.

:func:`pump_process` feeds the request's stdin, reads both output pipes as they fill, and yields text
as it becomes releasable; it returns when the program has exited (and its pipes are drained), when the
deadline passes, or when the execution is cancelled. It never kills anything itself: the caller ends
every path with :meth:`ProcessGroups.finish`, which kills the whole group.

Each stream goes through an :class:`OutputCapture`: raw bytes are capped at ``limit`` (the rest is read
and dropped, so the program never blocks on a full pipe, and ``truncated`` is set), decoded as UTF-8 with
replacement characters (non-UTF-8 output cannot break anything downstream), and — for command output —
pattern-redacted through a :class:`~codeflux.redact.StreamRedactor`, so a secret split across reads is
still caught. Command output keeps its **head and tail** (``keep_tail``): the first half of the cap is
released as it arrives, the last bytes are kept in a rolling window, and when the program is done a note
saying how many characters (and lines) were elided is released, then the tail (starting at a line
boundary when one is near, redacted whole).

A program that exits while a background child keeps its pipes open is not waited for: whatever is
already buffered is read for a short grace period, then the pump returns.

The program's exit wakes the pump directly: a pidfd (``pidfd_open``, Linux 5.3+) sits in the same
selector as the pipes, so neither output nor exit waits for a polling tick. The tick
(:data:`_TICK_S`) only bounds how late a cancel is noticed; the deadline is a select timeout of its own.
Where pidfds are unavailable the pump falls back to polling the exit with a short, doubling pause.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import selectors
import subprocess
import time
from collections import deque
from collections.abc import Generator
from enum import StrEnum
from typing import Final

from codeflux.domain.truncation import elided_note
from codeflux.redact import StreamRedactor, redact
from codeflux.worker.processes import ProcessGroups
from codeflux.worker.tools.context import ToolContext

__all__ = ["OutputCapture", "PumpEnd", "pump_process"]

_READ_SIZE: Final = 64 * 1024
_TICK_S: Final = 0.05
_FIRST_PAUSE_S: Final = 0.0005
_DRAIN_GRACE_S: Final = 0.3


class PumpEnd(StrEnum):
    EXITED = "exited"
    TIMED_OUT = "timed-out"
    CANCELLED = "cancelled"


class OutputCapture:
    """One output stream: capped bytes → UTF-8 text (with replacement) → optionally redacted text.

    Without ``keep_tail`` the first ``limit`` bytes are kept and the rest dropped (``truncated`` says so).
    With it, about half of ``limit`` is kept from the head and the rest of the room from the tail, and
    :meth:`finish` releases the elision note and the tail; everything released stays within ``limit``.
    """

    def __init__(self, *, limit: int, redact: bool, keep_tail: bool = False) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._redactor = StreamRedactor() if redact else None
        self._redact = redact
        self._head_limit = limit // 2 if keep_tail else limit
        self._tail = _TailWindow(max(limit - self._head_limit - _NOTE_BYTES, 0)) if keep_tail else None
        self.captured_bytes = 0
        self.truncated = False
        self._released_line_end = True  # nothing released yet, or the last text released ended a line

    def feed(self, data: bytes) -> str:
        """Text that can be released now for ``data`` (possibly empty)."""
        room = max(self._head_limit - self.captured_bytes, 0)
        if len(data) > room:
            self.truncated = True
            if self._tail is not None:
                self._tail.add(data[room:])
            data = data[:room]
        if not data:
            return ""
        self.captured_bytes += len(data)
        text = self._decoder.decode(data)
        return self._released(self._redactor.feed(text) if self._redactor is not None else text)

    def _released(self, text: str) -> str:
        if text:
            self._released_line_end = text.endswith("\n")
        return text

    def finish(self) -> str:
        """The rest of the stream, once the program is done (with a kept tail: the note and the tail)."""
        rest = b""
        if self._tail is not None and self._tail.received and not self._tail.dropped_any:
            # The output ended before the tail's window overflowed: nothing was elided, so the bytes past the
            # head follow it as they came (the whole output fits the cap) — no note, not truncated.
            rest = self._tail.take()
            self.captured_bytes += len(rest)
            self.truncated = False
        text = ""
        if self.captured_bytes:  # something was fed: the decoder and redactor may hold some back
            text = self._decoder.decode(rest, final=True)
            if self._redactor is not None:
                text = self._redactor.feed(text) + self._redactor.flush()
            self._released(text)
        if self._tail is None or not self._tail.received:
            return text
        elided_characters, elided_lines, tail = self._tail.release()
        if self._redact:
            tail = redact(tail)
        separator = "" if self._released_line_end else "\n"
        note = elided_note(elided_characters, elided_lines, after_cut_line=bool(separator))
        return f"{text}{separator}{note}\n{tail}"


_NOTE_BYTES: Final = 128
"""Room kept free for the elision note (and its newlines) when a tail is kept."""
_CONTINUATION: Final = bytes(range(0x80, 0xC0))


def _characters(data: bytes) -> int:
    """Characters ``data`` holds as UTF-8: its bytes that do not continue a character."""
    return len(data.translate(None, _CONTINUATION))


class _TailWindow:
    """The last ``size`` bytes of a stream past its head, and the characters and lines that fell out."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._chunks: deque[bytes] = deque()
        self._held = 0
        self.received = False
        self._dropped_bytes = 0
        self._dropped_characters = 0
        self._dropped_lines = 0

    def add(self, data: bytes) -> None:
        self.received = True
        self._chunks.append(data)
        self._held += len(data)
        while self._held > self._size:
            first = self._chunks.popleft()
            over = self._held - self._size
            gone, kept = first[:over], first[over:]
            if kept:
                self._chunks.appendleft(kept)
            self._drop(gone)
            self._held -= len(gone)

    @property
    def dropped_any(self) -> bool:
        """True once a byte fell out of the window (something between the head and the tail is elided)."""
        return self._dropped_bytes > 0

    def take(self) -> bytes:
        """Every byte held, removed from the window (nothing was dropped: they follow the head directly)."""
        data = b"".join(self._chunks)
        self._chunks.clear()
        self._held = 0
        self.received = False
        return data

    def _drop(self, gone: bytes) -> None:
        self._dropped_bytes += len(gone)
        self._dropped_characters += _characters(gone)
        self._dropped_lines += gone.count(b"\n")

    def release(self) -> tuple[int, int, str]:
        """(characters elided, lines elided, the tail as text starting at a line boundary when one is near)."""
        data = b"".join(self._chunks)
        newline = data.find(b"\n")
        start = newline + 1 if 0 <= newline < len(data) // 2 else 0
        while start < len(data) and data[start] in _CONTINUATION:  # never start inside a character
            start += 1
        self._drop(data[:start])
        return self._dropped_characters, self._dropped_lines, data[start:].decode("utf-8", errors="replace")


def pump_process(
    process: subprocess.Popen[bytes],
    *,
    stdin: bytes,
    context: ToolContext,
    stdout: OutputCapture,
    stderr: OutputCapture,
) -> Generator[tuple[str, str], None, PumpEnd]:
    """Yield ``("stdout"|"stderr", text)`` as output arrives; return how the pumping ended."""
    end = yield from _pump(process, stdin=stdin, context=context, captures={"stdout": stdout, "stderr": stderr})
    for name, capture in (("stdout", stdout), ("stderr", stderr)):
        rest = capture.finish()
        if rest:
            yield name, rest
    return end


def _pump(
    process: subprocess.Popen[bytes], *, stdin: bytes, context: ToolContext, captures: dict[str, OutputCapture]
) -> Generator[tuple[str, str], None, PumpEnd]:
    with _Pipes(process, stdin=stdin) as pipes:
        exited_at: float | None = None
        pause = _FIRST_PAUSE_S
        while True:
            stop = _stop_reason(context)
            if stop is not None:
                return stop
            now = time.monotonic()
            if exited_at is None and ProcessGroups.has_exited(process):
                exited_at = now
                pipes.forget_exit()
            if exited_at is not None and (not pipes.outputs_open() or now - exited_at > _DRAIN_GRACE_S):
                # Drained, or a background child holds the pipes open: the caller kills the group.
                return PumpEnd.EXITED
            timeout = min(_TICK_S, max(context.deadline - now, 0.0))
            if exited_at is not None:
                timeout = min(timeout, max(exited_at + _DRAIN_GRACE_S - now, 0.0))
            elif not pipes.watches_exit() and not pipes.outputs_open():
                # No pidfd, nothing left to read: the program is most likely exiting right now; poll.
                timeout, pause = min(timeout, pause), min(pause * 2, _TICK_S)
            for name, data in pipes.exchange(timeout=timeout):
                text = captures[name].feed(data)
                if text:
                    yield name, text


class _Pipes:
    """The program's pipes (and its pidfd) under one selector: stdin written as it drains, outputs read as
    they fill, the exit seen as it happens."""

    def __init__(self, process: subprocess.Popen[bytes], *, stdin: bytes) -> None:
        self._process = process
        self._selector = selectors.PollSelector()
        self._streams: dict[int, str] = {}
        self._pending = memoryview(stdin)
        self._pidfd = _open_pidfd(process.pid)
        for name, pipe in (("stdout", process.stdout), ("stderr", process.stderr)):
            if pipe is not None:
                self._selector.register(pipe.fileno(), selectors.EVENT_READ)
                self._streams[pipe.fileno()] = name
        if process.stdin is not None:
            os.set_blocking(process.stdin.fileno(), False)
            self._selector.register(process.stdin.fileno(), selectors.EVENT_WRITE)
        if self._pidfd is not None:
            self._selector.register(self._pidfd, selectors.EVENT_READ)

    def __enter__(self) -> _Pipes:
        return self

    def __exit__(self, *_: object) -> None:
        self.forget_exit()
        self._selector.close()

    def outputs_open(self) -> bool:
        return any(descriptor in self._streams for descriptor in self._selector.get_map())

    def watches_exit(self) -> bool:
        return self._pidfd is not None

    def forget_exit(self) -> None:
        """Stop watching the exit (once seen, a pidfd stays readable and would spin the selector)."""
        if self._pidfd is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(self._pidfd)
        os.close(self._pidfd)
        self._pidfd = None

    def exchange(self, *, timeout: float) -> list[tuple[str, bytes]]:
        """Write what stdin accepts, read what has arrived: ``(stream, bytes)`` pairs, EOFs unregistered.

        Returns early (possibly with nothing) when the program exits; the pidfd is then dropped (it would
        stay readable) and the caller confirms the exit with ``waitid``."""
        arrived: list[tuple[str, bytes]] = []
        if not self._selector.get_map():
            time.sleep(timeout)
            return arrived
        for key, _ in self._selector.select(timeout):
            descriptor = int(key.fd)
            if descriptor == self._pidfd:
                self.forget_exit()
                continue
            if descriptor not in self._streams:
                self._write_stdin()
                continue
            data = _read_some(descriptor)
            if data is None:
                continue
            if data:
                arrived.append((self._streams[descriptor], data))
            else:
                self._selector.unregister(descriptor)
        return arrived

    def _write_stdin(self) -> None:
        pipe = self._process.stdin
        if pipe is None:
            return
        try:
            written = os.write(pipe.fileno(), self._pending[:_READ_SIZE]) if self._pending else 0
        except BlockingIOError:
            return
        except OSError:  # the program closed its stdin (EPIPE): the rest is dropped
            written = len(self._pending)
        self._pending = self._pending[written:]
        if not self._pending:
            self._selector.unregister(pipe.fileno())
            with contextlib.suppress(OSError):
                pipe.close()


def _open_pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits, or None where the kernel has none.

    Safe against pid reuse: ``pid`` is our unreaped child, so it names this program until reaped."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:  # ENOSYS (old kernel), EPERM (a seccomp filter)
        return None


def _stop_reason(context: ToolContext) -> PumpEnd | None:
    if context.cancelled.is_set():
        return PumpEnd.CANCELLED
    if time.monotonic() >= context.deadline:
        return PumpEnd.TIMED_OUT
    return None


def _read_some(descriptor: int) -> bytes | None:
    """Bytes read (``b""`` at end of stream), or None when nothing is there after all."""
    try:
        return os.read(descriptor, _READ_SIZE)
    except BlockingIOError:
        return None
    except OSError:
        return b""
