"""The facts of a checkout memory is checked against, read without running any repository code.

* the repository: its root commit (the parentless commits reachable from HEAD; with several roots, the smallest id)
  and the commit checked out, read through pygit2 (:func:`codeflux.gitwork.repository.checkout_commits`);
* each file's git blob hash **as the file is on disk now** (hashed here the way git hashes a blob, so a file
  unchanged since HEAD has HEAD's blob, and an uncommitted edit in a task worktree already counts as a change);
* the dependency set: a sha256 over the dependency declarations of ``pyproject.toml`` (project dependencies,
  optional dependencies, dependency groups, build requirements, poetry's tables), every ``requirements*.txt``
  (comments and blank lines dropped) and the lock files (``uv.lock``, ``poetry.lock``, ``Pipfile.lock``,
  ``pdm.lock``, ``Pipfile``) byte for byte — so a version bump in any of them changes the hash, and a change to
  the project's description does not;
* the toolchain: the repository environment's interpreter version (``pyvenv.cfg`` of ``.venv``/``venv``) and the
  versions of the check tools installed in it (from their ``*.dist-info`` folder names); without an environment,
  the interpreter ``python3`` on PATH resolves to. Nothing is executed to learn them.

No program is started: git's objects are read in process, files are hashed here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

from codeflux.domain.memory import CurrentFacts, Toolchain
from codeflux.gitwork.repository import checkout_commits
from codeflux.gitwork.revision_files import blob_ids_at, small_files_at

__all__ = [
    "CHECK_TOOLS",
    "LOCK_FILES",
    "blob_hash_of_file",
    "current_facts",
    "dependency_hash_at",
    "dependency_hash_of",
    "dependency_hash_of_texts",
    "facts_at_revision",
    "head_commit_of",
    "is_dependency_file",
    "probe_toolchain",
    "root_commit_of",
]

LOCK_FILES: Final = ("uv.lock", "poetry.lock", "Pipfile.lock", "pdm.lock", "Pipfile")
CHECK_TOOLS: Final = frozenset({"pytest", "coverage", "hypothesis", "ruff", "mypy", "mutmut", "radon", "bandit",
                                "pytest-cov", "libcst"})
_MAX_DEPENDENCY_FILE_BYTES: Final = 8 * 1024 * 1024
_VERSION_LINE = re.compile(r"^\s*version(?:_info)?\s*=\s*([0-9][0-9A-Za-z.+-]*)\s*$", re.MULTILINE)
_DIST_INFO = re.compile(r"^([A-Za-z0-9_.-]+?)-([0-9][0-9A-Za-z.+!-]*)\.dist-info$")


def root_commit_of(root: Path) -> str:
    """The repository's root commit (the smallest id when history has several roots)."""
    return checkout_commits(root)[1][0]


def head_commit_of(root: Path) -> str:
    """The commit checked out (``HEAD``)."""
    return checkout_commits(root)[0]


def blob_hash_of_file(root: Path, path: str, *, object_format: str = "sha1") -> str | None:
    """The git blob hash of ``path`` (relative to ``root``) as it is on disk now; None when it is not a regular file
    or a symbolic link (a link hashes its target text, as git stores it). Never follows a link out of ``root``."""
    target = root / path
    try:
        if os.path.commonpath([os.path.realpath(target.parent), os.path.realpath(root)]) != os.path.realpath(root):
            return None  # a folder on the way is a link out of the checkout: not a file of it
        info = os.lstat(target)
        if stat.S_ISLNK(info.st_mode):
            data = os.fsencode(os.readlink(target))
        elif stat.S_ISREG(info.st_mode):
            data = target.read_bytes()
        else:
            return None
    except (OSError, ValueError):
        return None
    digest = hashlib.sha256() if object_format == "sha256" else hashlib.sha1(usedforsecurity=False)
    digest.update(b"blob %d\x00" % len(data))
    digest.update(data)
    return digest.hexdigest()


def _pyproject_dependencies(text: str) -> object:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {"unparsed-sha256": hashlib.sha256(text.encode()).hexdigest()}
    project = document.get("project", {}) if isinstance(document.get("project"), dict) else {}
    tool = document.get("tool", {}) if isinstance(document.get("tool"), dict) else {}
    poetry = tool.get("poetry", {}) if isinstance(tool.get("poetry"), dict) else {}
    build = document.get("build-system", {}) if isinstance(document.get("build-system"), dict) else {}
    return {
        "dependencies": project.get("dependencies"),
        "optional-dependencies": project.get("optional-dependencies"),
        "requires-python": project.get("requires-python"),
        "dependency-groups": document.get("dependency-groups"),
        "build-requires": build.get("requires"),
        "poetry": {key: poetry.get(key) for key in ("dependencies", "dev-dependencies", "group")},
    }


def _requirement_lines(text: str) -> list[str]:
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def _read_small(path: Path) -> str | None:
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > _MAX_DEPENDENCY_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def is_dependency_file(path: str) -> bool:
    """Whether the repository-relative ``path`` is one of the dependency declarations the hash covers (see the
    module docstring)."""
    folder, _, name = path.rpartition("/")
    if not folder:
        return name == "pyproject.toml" or name in LOCK_FILES or (name.startswith("requirements")
                                                                   and name.endswith(".txt"))
    return folder == "requirements" and name.endswith(".txt")


def dependency_hash_of_texts(texts: Mapping[str, str]) -> str:
    """sha256 over the dependency declarations given as repository-relative path → text (files that are not
    declarations are ignored): the same hash :func:`dependency_hash_of` reads from disk, from any source."""
    declared: dict[str, object] = {}
    for path, text in texts.items():
        if not is_dependency_file(path):
            continue
        if path == "pyproject.toml":
            declared[path] = _pyproject_dependencies(text)
        elif path in LOCK_FILES:
            declared[path] = hashlib.sha256(text.encode()).hexdigest()
        else:
            declared[path] = _requirement_lines(text)
    canonical = json.dumps(declared, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def dependency_hash_of(root: Path) -> str:
    """sha256 over the checkout's dependency declarations (see the module docstring); the same for a checkout
    that declares none."""
    candidates = [root / "pyproject.toml", *root.glob("requirements*.txt"), *root.glob("requirements/*.txt"),
                  *(root / name for name in LOCK_FILES)]
    texts: dict[str, str] = {}
    for path in candidates:
        text = _read_small(path)
        if text is not None:
            texts[path.relative_to(root).as_posix()] = text
    return dependency_hash_of_texts(texts)


def dependency_hash_at(root: Path, commit: str) -> str:
    """:func:`dependency_hash_of` as the declarations are in ``commit`` of the checkout's repository."""
    return dependency_hash_of_texts(small_files_at(root, commit, folders=("", "requirements"),
                                                   accept=is_dependency_file,
                                                   max_bytes=_MAX_DEPENDENCY_FILE_BYTES))


def _environment_of(root: Path) -> Path | None:
    for name in (".venv", "venv"):
        candidate = root / name
        if (candidate / "pyvenv.cfg").is_file() and not candidate.is_symlink():
            return candidate
    return None


def probe_toolchain(root: Path) -> Toolchain:
    """The interpreter and check-tool versions of the checkout's environment (see the module docstring)."""
    environment = _environment_of(root)
    if environment is None:
        python = shutil.which("python3")
        return Toolchain.of({"python": f"system {os.path.realpath(python)}" if python else "unknown"})
    text = _read_small(environment / "pyvenv.cfg") or ""
    found = _VERSION_LINE.search(text[:8192])
    tools = {"python": found.group(1) if found else "unknown"}
    for site in sorted(environment.glob("lib/python*/site-packages")):
        for entry in sorted(site.iterdir()):
            match = _DIST_INFO.match(entry.name)
            if match is not None and match.group(1).lower().replace("_", "-") in CHECK_TOOLS:
                tools[match.group(1).lower().replace("_", "-")] = match.group(2)
    return Toolchain.of(tools)


def current_facts(root: Path, paths: Iterable[str], *, toolchain: Toolchain | None = None) -> CurrentFacts:
    """What ``root`` is now, with the current blob of each of ``paths``. ``toolchain`` overrides the probe when the
    caller knows the versions its checks ran with."""
    root_commit = root_commit_of(root)
    object_format = "sha256" if len(root_commit) == 64 else "sha1"
    chain = probe_toolchain(root) if toolchain is None else toolchain
    return CurrentFacts(root_commit=root_commit, toolchain_hash=chain.digest, dependency_hash=dependency_hash_of(root),
                        blobs={path: blob_hash_of_file(root, path, object_format=object_format)
                               for path in sorted(set(paths))})


def facts_at_revision(root: Path, commit: str, paths: Iterable[str], *, toolchain: Toolchain | None = None
                      ) -> CurrentFacts:
    """What the checkout's repository was in ``commit`` (a task's base revision): its root commit, the dependency
    set and each of ``paths``' blob **in that commit** — not on disk — and the toolchain of the checkout's
    environment (which git does not hold: ``toolchain`` overrides the probe). The facts name the revision."""
    root_commit = root_commit_of(root)
    chain = probe_toolchain(root) if toolchain is None else toolchain
    return CurrentFacts(root_commit=root_commit, toolchain_hash=chain.digest,
                        dependency_hash=dependency_hash_at(root, commit), blobs=blob_ids_at(root, commit, paths),
                        revision=commit)
