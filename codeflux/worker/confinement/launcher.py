"""The fallback box's launcher: ``python -I -B -m codeflux.worker.confinement POLICY -- PROGRAM ARGV…``.

It runs as its own single-threaded process (the worker is threaded, so restricting between ``fork`` and
``exec`` there — ``preexec_fn`` — is not safe), applies Landlock and seccomp to itself
(:func:`~codeflux.worker.confinement.landlock.restrict_self`), then execs ``PROGRAM`` with ``ARGV``
(``ARGV[0]`` as written) and its own environment (less a frozen build's PyInstaller variables). If any step
fails it exits 126 with one line on stderr, and nothing runs unconfined.

``POLICY`` is JSON: readable roots, writable roots, whether the network was granted, the Landlock ABI.
It holds paths only (it is visible in ``/proc/<pid>/cmdline``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from codeflux.worker.confinement.landlock import LandlockPolicy, restrict_self
from codeflux.worker.confinement.paths import BoxPaths, install_prefix_to_expose, is_beneath
from codeflux.worker.interpreter import isolated_python_argv, without_frozen_runtime

__all__ = ["launcher_argv", "main", "readable_roots"]

CANNOT_CONFINE: Final = 126


def launcher_argv(python: str, paths: BoxPaths, program: str, argv: list[str], *, network: bool,
                  abi: int) -> list[str]:
    """The launcher's argv for running ``program`` as ``argv`` in the Landlock box of ``paths``."""
    shown = [*paths.shown_readonly, *install_prefix_to_expose(program, paths, started_as=argv[0])]
    if paths.git_common_dir is not None:
        shown.append(paths.git_common_dir)
    policy = {
        "readable": [str(path) for path in readable_roots(paths.all_hidden, shown)],
        "writable": [str(path) for path in paths.writable],
        "network": network,
        "abi": abi,
    }
    return [*isolated_python_argv("codeflux.worker.confinement", python=python),
            json.dumps(policy, separators=(",", ":")), "--", program, *argv]


def readable_roots(hidden: Sequence[Path], shown: Sequence[Path]) -> list[Path]:
    """Directories (and files) to grant read on so that nothing beneath ``hidden`` is readable except
    what lies beneath ``shown``.

    Landlock only grants, so the hidden directories are carved out: from ``/`` down towards each hidden
    path, every sibling that leads to no hidden path is granted whole. A symbolic link is granted only
    if it resolves to somewhere visible (granting a link grants its target).
    """
    granted: list[Path] = []

    def visible(path: Path) -> bool:
        return not any(is_beneath(path, root) for root in hidden)

    def walk(directory: Path) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            return
        for entry in entries:
            path = Path(entry.path)
            if not visible(path):
                continue
            if entry.is_symlink():
                if visible(Path(os.path.realpath(path))):
                    granted.append(path)
                continue
            if any(root != path and is_beneath(root, path) for root in hidden):
                walk(path)  # a hidden directory lies below: descend and carve it out
            else:
                granted.append(path)

    walk(Path("/"))
    return [*granted, *shown]


def main(arguments: Sequence[str]) -> int:
    try:
        policy_text, separator, program, *argv = arguments
        if separator != "--" or not argv or not os.path.isabs(program):
            raise ValueError("usage: POLICY -- PROGRAM ARGV0 [ARG…]")
        document = json.loads(policy_text)
        policy = LandlockPolicy(readable=tuple(document["readable"]), writable=tuple(document["writable"]),
                                network=bool(document["network"]))
        restrict_self(policy, abi=int(document["abi"]))
    except (ValueError, KeyError, TypeError, OSError) as error:
        print(f"codeflux: could not confine the command; it did not run ({error})", file=sys.stderr, flush=True)
        return CANNOT_CONFINE
    try:
        os.execve(program, argv, without_frozen_runtime(os.environ))  # noqa: S606 (argv only, never a shell)
    except OSError as error:
        print(f"codeflux: could not start {program} ({error.strerror})", file=sys.stderr, flush=True)
        return 127 if isinstance(error, FileNotFoundError) else CANNOT_CONFINE
    return CANNOT_CONFINE  # unreachable: execve does not return
