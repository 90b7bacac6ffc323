"""Pure, table-driven classification of a bound tool request into the capabilities it needs.

No I/O: the path resolver (symlinks) runs elsewhere and hands in what it found as
:class:`WorktreeFacts`. The rules, and why, are documented in ``docs/security.md`` ("Capability
classification"); in short:

* File tools need ``read`` or ``task-write``. A path that is not a plain worktree-relative path
  (empty, absolute, ``~``, ``..``, a backslash, a drive letter or colon, surrounding whitespace, or
  reported escaping by the resolver) adds ``outside-write`` — reads too, since leaving the worktree is
  what must be asked about. A ``.git`` component adds ``privileged`` (hooks and config there run code
  and belong to the user's repository). Credential-looking paths (``~/.ssh``, ``.env``, ``*.pem`` …)
  add ``credential``.
* ``run_command`` always needs ``process``. Its argv is read through wrappers (``env``, ``timeout``,
  ``nice``, ``nohup``, ``xargs``, ``sudo`` …), absolute executable paths, shells with ``-c`` (whose
  strings are lexed; every command in a compound string counts) and interpreters with inline code.
  Known programs add what they do (``curl`` → ``network:host``, ``pip install`` → ``network`` +
  ``install``, ``rm -rf`` → ``destructive`` …), and so do the programs their options name
  (``zip -TT``, ``man -P``, ``git -c diff.external=``, ``git grep -O``). A shell redirection to
  ``/dev/tcp/HOST/PORT`` needs ``network:HOST``. Unknown programs need ``process``, plus unscoped
  ``network`` when an argument names a destination (a URL, ``HOST:PORT``), plus what an argument that
  names a known program would run (``rlwrap curl URL``).
* Options are read in every spelling the program accepts — clustered (``-Rns``), with an attached
  value (``-Icmd``), abbreviated (``--use-compress=cmd``), after operands where the program reads
  them there (``sed f -e …``, ``ssh host -o …``) — since a spelling the reader misses is a side door.
  A program name is folded to another (an alias) only when the two read their argv alike.
* What cannot be read — an unparseable shell string, a program name decided at run time
  (``$X``, a substitution, a glob), a program that reads its script from stdin, nesting deeper than
  :data:`MAX_NESTING`, code given to a tool that runs it unread (``sqlite3 .shell``, ``make --eval``,
  ``git -c include.path=``) — needs *every* non-automatic capability, so any denial blocks it.

Classification only ever adds needs: no argument text ("approved", "read-only", a purpose) can remove
one, and wrappers never hide the wrapped command.

The package, by job (only the names below are public; the modules are private to it):

* ``classification`` — the result types; ``request`` — :func:`classify_tool_request`, the entry point;
  ``findings`` — the accumulator every reader adds needs and reasons to.
* ``paths`` — path findings (file tools, ``apply_patch`` diffs, path-like command arguments);
  ``hosts`` — network destinations in URLs, host words and the shell's ``/dev/tcp`` paths.
* ``shell`` — the ``sh -c`` lexer and compound detection; ``options`` — option grammars;
  ``commands`` — reading one argv or shell string against the program table, nesting, assignments.
* ``programs`` — the program table, built from the families: ``wrappers`` (look-through),
  ``launchers`` (setpriv, prlimit, fakeroot, capsh … read through the same way), ``network``, ``git``,
  ``forges`` (gh, glab, hub), ``packages`` (and make), ``interpreters``, ``archives`` (tar, zip),
  ``sidedoors`` (sqlite3, man); ``unknown`` reads the programs the table does not name.

May import: codeflux.domain and codeflux.store (and the standard library).
"""

from __future__ import annotations

from codeflux.authority.classify.classification import Classification, WorktreeFacts
from codeflux.authority.classify.commands import MAX_NESTING
from codeflux.authority.classify.request import classify_tool_request
from codeflux.domain.authority import ClassifiedNeed

__all__ = [
    "MAX_NESTING",
    "Classification",
    "ClassifiedNeed",
    "WorktreeFacts",
    "classify_tool_request",
]
