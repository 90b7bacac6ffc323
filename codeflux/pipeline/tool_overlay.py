"""Check tools the repository's environment lacks, from codeflux's tool overlay — never by changing that environment.

**What an overlay is.** Per interpreter — its implementation, ``major.minor`` and platform tag, asked of the
repository's own interpreter in the task's box (:data:`PROBE_SCRIPT`) — a directory
``<data>/tools/repo-<hash>/<key>/site`` (:func:`repository_tools`: never shared between repositories)
holding the check tools (:data:`CHECK_TOOLS`: coverage.py and Hypothesis) and a manifest
(:data:`MANIFEST`) naming each tool's version and where it was installed from. A check that needs a tool runs
``<python> -c BOOTSTRAP_SCRIPT <overlay site> -m <module> …`` (:func:`overlay_argv`): the fixed bootstrap
*appends* the overlay after site-packages (``site.addsitedir``) and runs the module — never ``PYTHONPATH``,
which would put it first — so the repository's own version of a tool wins whenever it has one. The box shows
``<data>/tools`` read-only (:func:`~codeflux.worker.client.confinement.box_request`); the rest of the data
directory stays hidden.

**How one is installed.** Once per key (again when a check needs a tool the key's overlay lacks), behind an
``install`` approval, always every tool of :data:`CHECK_TOOLS`: the pipeline's own request
:func:`install_argv` — the repository's interpreter running pip, started in ``$TMPDIR/codeflux-tools`` — runs
confined in the task's worker and installs into ``site`` there (the box never writes the data directory),
from the :class:`ToolSource` the coordinator was given: by default codeflux's own installation (its check tools
rebuilt as wheels in that folder: :mod:`~codeflux.pipeline.own_wheels`), or a wheelhouse (both ``--no-index``, no
network), or an index, which needs the ``network`` the approval then carries. The coordinator then verifies
what landed (each tool's ``.dist-info`` names it at a version, no symbolic links, nothing beside ``site``) and
moves it into place atomically (a rename inside the data directory). Afterwards the overlay is reused offline by
every task whose interpreter has the same key.

**Missing and not installable** (the install declined, refused or failed — pip refuses codeflux's own wheels for
an interpreter of another version — or nothing verified) →
:attr:`ToolResolution.blocked` says which tool and the command that fixes it. Evidence records each tool's
version and which environment provided it (``repository environment`` or ``codeflux overlay``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shlex
import shutil
import sys
import sysconfig
import threading
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.domain.operations import TASK_TEMP_DIRECTORY
from codeflux.pipeline.own_wheels import rebuild_wheels
from codeflux.pipeline.ports import INDEX_VARIABLE, WHEELHOUSE_VARIABLE, WHEELS_FOLDER, PipelinePorts, ToolSource

__all__ = [
    "BOOTSTRAP_SCRIPT",
    "CHECK_TOOLS",
    "COVERAGE",
    "HYPOTHESIS",
    "INDEX_VARIABLE",
    "INSTALL_TEMP",
    "INSTALL_WORKING_DIRECTORY",
    "MANIFEST",
    "OVERLAY_SITE_SCRIPT",
    "PROBE_SCRIPT",
    "TOOLS_FOLDER",
    "WHEELHOUSE_VARIABLE",
    "CheckTool",
    "InterpreterFacts",
    "ProvidedTool",
    "ToolResolution",
    "ToolSource",
    "install_argv",
    "install_to_settle",
    "installed_overlay",
    "overlay_argv",
    "probe_argv",
    "repository_tools",
    "resolve_tools",
    "tools_directory",
]

TOOLS_FOLDER: Final = "tools"
"""The overlays' folder in the data directory."""
INSTALL_TEMP: Final = "codeflux-tools"
"""Where an install lands, relative to the task's TMPDIR (``site`` inside it)."""
MANIFEST: Final = "codeflux-overlay.json"
REPOSITORY_ENVIRONMENT: Final = "repository environment"
OVERLAY: Final = "codeflux overlay"
_MARKER: Final = "codeflux-tools "
_KEY_PART: Final = re.compile(r"[A-Za-z0-9_.+-]{1,64}")
_MAX_OVERLAY_FILES: Final = 20_000


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckTool:
    """A check tool: its distribution ``name``, the ``module`` checks run, the ``requirement`` installed."""

    name: str
    module: str
    requirement: str


COVERAGE: Final = CheckTool(name="coverage", module="coverage", requirement="coverage>=7.4,<8")
HYPOTHESIS: Final = CheckTool(name="hypothesis", module="hypothesis", requirement="hypothesis>=6.100,<7")
"""Stage 12's fuzzer (its dependencies — sortedcontainers, and attrs for older releases — come from the same
source; ``cmd/codeflux-dev setup`` puts them in its wheelhouse)."""
CHECK_TOOLS: Final = (COVERAGE, HYPOTHESIS)
"""The tools an overlay holds (pytest-randomly and pytest join later). An install always installs every one of them
(one exact request, the one the runner's pre-flight settles), so an overlay made before a tool joined this list is
replaced, on the next install, by one holding them all — while a check that needs only the tools the older overlay
already has keeps using it (:func:`resolve_tools` asks only for the ``tools`` a check names)."""


def tools_directory(data_dir: Path) -> Path:
    """The overlays' folder of the data directory ``data_dir`` (shown read-only in every box)."""
    return data_dir / TOOLS_FOLDER


PROBE_SCRIPT: Final = (
    "import importlib.metadata, importlib.util, json, os, sys, sysconfig\n"
    "tools = {}\n"
    "for pair in sys.argv[1:]:\n"
    "    name, _, module = pair.partition('=')\n"
    "    try:\n"
    "        spec = importlib.util.find_spec(module)\n"
    "    except (ImportError, ValueError):\n"
    "        spec = None\n"
    "    if spec is None or spec.origin is None:\n"
    "        tools[name] = None\n"
    "        continue\n"
    "    entry = max((p for p in sys.path if p and spec.origin.startswith(os.path.join(os.path.abspath(p), ''))),\n"
    "                key=len, default=None)\n"
    "    found = list(importlib.metadata.distributions(name=name, path=[entry])) if entry else []\n"
    "    tools[name] = {'version': found[0].version if found else None, 'location': entry}\n"
    "report = {'implementation': sys.implementation.name,\n"
    "          'version': '%d.%d' % sys.version_info[:2], 'platform': sysconfig.get_platform(),\n"
    "          'executable': sys.executable, 'tools': tools}\n"
    "print()\n"
    "print('" + _MARKER + "' + json.dumps(report))\n"
)
"""Asked of the repository's interpreter in the box: its key's parts and which check tools it has itself."""

INSTALL_WORKING_DIRECTORY: Final = f"{TASK_TEMP_DIRECTORY}/{INSTALL_TEMP}"
"""Where the install request starts (its own operation identity): pip's ``--target site`` lands in the task's
TMPDIR, never in the data directory, which the box hides."""

BOOTSTRAP_SCRIPT: Final = (
    "import os, runpy, site, sys\n"
    "overlay = sys.argv[1]\n"
    "if os.path.isdir(overlay):\n"
    "    site.addsitedir(overlay)\n"
    "module = sys.argv[3]\n"
    "sys.argv = [module, *sys.argv[4:]]\n"
    "runpy.run_module(module, run_name='__main__', alter_sys=True)\n"
)
"""Appends the overlay after site-packages and runs ``-m MODULE ARGS…`` (argv: overlay, ``-m``, module, args)."""


OVERLAY_SITE_SCRIPT: Final = (
    "import importlib.util, os, site, sys\n"
    "overlay = sys.argv[1]\n"
    "own_hypothesis = importlib.util.find_spec('hypothesis') is not None\n"
    "if overlay != '-' and os.path.isdir(overlay):\n"
    "    site.addsitedir(overlay)\n"
    "overlay_plugins_off = [] if own_hypothesis else ['-p', 'no:hypothesispytest']\n"
    "os.environ['HYPOTHESIS_STORAGE_DIRECTORY'] = os.path.join(os.environ['TMPDIR'], 'codeflux-checks', 'hypothesis')\n"
)
"""The opening of the fixed scripts that run the repository's tests with the overlay appended (the coverage map,
stage 11's seeded orders, the switching runner of stages 8 and 13): argv[1] is the overlay's site folder or ``-``.
Hypothesis is in every overlay for stage 12's fuzzer, not for the repository's tests; when the repository's own
environment lacks it, its pytest plugin (which imports all of Hypothesis, ≈ 0.5 s, at every session's end) is not
loaded from the overlay: ``overlay_plugins_off`` goes first in the script's pytest arguments. The plugin is
loaded as usual when the environment has Hypothesis itself. Hypothesis's home (its example database) is
``$TMPDIR/codeflux-checks/hypothesis`` (``HYPOTHESIS_STORAGE_DIRECTORY``, which recent Hypothesis releases
read), never the worktree the coverage run starts in."""


def probe_argv(interpreter: str, tools: Sequence[CheckTool] = CHECK_TOOLS) -> tuple[str, ...]:
    return (interpreter, "-c", PROBE_SCRIPT, *(f"{tool.name}={tool.module}" for tool in tools))


def install_argv(interpreter: str, source: ToolSource, tools: Sequence[CheckTool] = CHECK_TOOLS) -> tuple[str, ...]:
    """The exact install request (what a person approves, or a headless run pre-approves), started in
    :data:`INSTALL_WORKING_DIRECTORY`: the repository's interpreter running pip — ``--isolated`` (no ``PIP_*``
    variable or user configuration), wheels only (no build step runs code), no bytecode — into ``site`` there.
    From a wheelhouse it is ``--no-index``: classified without ``network``, the box has none."""
    return (interpreter, "-m", "pip", "install", "--isolated", "--no-input", "--disable-pip-version-check",
            "--only-binary=:all:", "--no-compile", "--target", "site", *source.pip_arguments(),
            *(tool.requirement for tool in tools))


def overlay_argv(interpreter: str, overlay_site: Path | None, module: str, arguments: Sequence[str]
                 ) -> tuple[str, ...]:
    """``module`` run by ``interpreter`` with the overlay appended (see the module docstring); without an
    overlay (every tool is the repository's own) the plain ``-m`` form."""
    if overlay_site is None:
        return (interpreter, "-m", module, *arguments)
    return (interpreter, "-c", BOOTSTRAP_SCRIPT, str(overlay_site), "-m", module, *arguments)


@dataclass(frozen=True, slots=True, kw_only=True)
class InterpreterFacts:
    """What the probe reported: the key's parts and the tools the environment has (None: it lacks it)."""

    implementation: str
    version: str
    platform: str
    executable: str
    tools: Mapping[str, Mapping[str, object] | None]

    @property
    def key(self) -> str:
        platform = re.sub(r"[^A-Za-z0-9]+", "_", self.platform)
        return f"{self.implementation}-{self.version}-{platform}"


def _probed(stdout: str) -> InterpreterFacts | None:
    line = next((line for line in reversed(stdout.splitlines()) if line.startswith(_MARKER)), None)
    if line is None:
        return None
    try:
        document = json.loads(line[len(_MARKER):])
    except ValueError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("tools"), dict):
        return None
    parts = [str(document.get(name, "")) for name in ("implementation", "version", "platform")]
    if not all(_KEY_PART.fullmatch(re.sub(r"[^A-Za-z0-9_.+-]", "_", part)) for part in parts):
        return None
    tools = {str(name): (dict(found) if isinstance(found, dict) else None)
             for name, found in document["tools"].items()}
    return InterpreterFacts(implementation=parts[0], version=parts[1], platform=parts[2],
                            executable=str(document.get("executable", ""))[:500], tools=tools)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Probe:
    """One interpreter's probe, kept for the attempt: what it reported and the exact argv that asked."""

    facts: InterpreterFacts
    argv: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProvidedTool:
    """A check tool as a check will use it: its version and which environment provided it."""

    name: str
    version: str | None
    provided_by: str
    location: str | None

    def to_evidence(self) -> dict[str, object]:
        return {"tool": self.name, "version": self.version, "provided_by": self.provided_by,
                "location": self.location}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResolution:
    """The check tools for one interpreter, or why they are not there (``blocked``: the tool and the fix)."""

    interpreter: str
    tools: tuple[ProvidedTool, ...] = ()
    overlay_site: Path | None = None
    key: str | None = None
    blocked: str | None = None
    install: Mapping[str, object] | None = None
    probe_argv: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        return self.blocked is None

    def to_evidence(self) -> dict[str, object]:
        return {"interpreter": self.interpreter, "key": self.key, "tools": [tool.to_evidence() for tool in self.tools],
                "overlay": None if self.overlay_site is None else str(self.overlay_site),
                "install": None if self.install is None else dict(self.install), "blocked": self.blocked}


def _read_manifest(directory: Path) -> dict[str, object] | None:
    try:
        document = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def installed_overlay(tools_root: Path, key: str) -> tuple[Path, Mapping[str, str]] | None:
    """The overlay of ``key`` (its ``site`` and tool → version), or None when none was verified and moved there."""
    directory = tools_root / key
    manifest = _read_manifest(directory)
    if manifest is None or manifest.get("key") != key or not (directory / "site").is_dir():
        return None
    tools = manifest.get("tools")
    if not isinstance(tools, dict):
        return None
    return directory / "site", {str(name): str(version) for name, version in tools.items()}


_DIST_INFO: Final = re.compile(r"(?P<name>[A-Za-z0-9_.]+)-(?P<version>[A-Za-z0-9_.+!]+)\.dist-info")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def verify_installed(site: Path, tools: Sequence[CheckTool]) -> dict[str, str] | str:
    """Each tool's version from its ``.dist-info`` in ``site`` — or what is wrong (a link, too many files, a tool
    missing). What the box wrote is checked here, by the coordinator, before it is moved anywhere."""
    if site.is_symlink() or not site.is_dir():
        return "the install wrote no site folder"
    count = 0
    for root, directories, files in os.walk(site):
        for name in (*directories, *files):
            count += 1
            if os.path.islink(os.path.join(root, name)):
                return f"the install wrote a symbolic link ({os.path.relpath(os.path.join(root, name), site)})"
        if count > _MAX_OVERLAY_FILES:
            return f"the install wrote more than {_MAX_OVERLAY_FILES} files"
    versions = {}
    for entry in site.iterdir():
        matched = _DIST_INFO.fullmatch(entry.name)
        if matched and entry.is_dir():
            versions[_normalized(matched["name"])] = matched["version"]
    found: dict[str, str] = {}
    for tool in tools:
        version = versions.get(_normalized(tool.name))
        if version is None:
            return f"the install did not leave {tool.name}"
        found[tool.name] = version
    return found


def _move_into_place(tools_root: Path, key: str, installed: Path, manifest: Mapping[str, object]) -> Path:
    """Move ``installed`` (the verified ``site``) to ``<tools>/<key>/site`` with its manifest: the new directory is
    prepared beside the final one and renamed over it in one step (an older overlay of the key is swapped out)."""
    tools_root.mkdir(mode=0o755, parents=True, exist_ok=True)
    staging = tools_root / f".staging-{key}-{secrets.token_hex(6)}"
    staging.mkdir(mode=0o755)
    try:
        try:
            os.rename(installed, staging / "site")
        except OSError:  # another file system: copy (what the box wrote is checked; links were refused)
            shutil.copytree(installed, staging / "site", symlinks=True)
        (staging / MANIFEST).write_text(json.dumps(dict(manifest), sort_keys=True, indent=1), encoding="utf-8")
        final = tools_root / key
        if final.exists():
            retired = tools_root / f".retired-{key}-{secrets.token_hex(6)}"
            os.rename(final, retired)
            os.rename(staging, final)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.rename(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final / "site"


def _fix_for(interpreter: str, missing: Sequence[CheckTool]) -> str:
    names = " ".join(tool.requirement for tool in missing)
    return (f"install it into the repository's environment ({shlex.join([interpreter, '-m', 'pip', 'install', names])})"
            f", or start the coordinator with ${WHEELHOUSE_VARIABLE} (a folder of wheels for that interpreter, e.g. "
            f"the one `cmd/codeflux-dev setup` fills in .artifacts/wheelhouse) or ${INDEX_VARIABLE} so codeflux can "
            "install its overlay (by default it offers its own, which suit only its own Python version)")


_PROBED: Final = "interpreters.json"
_MAX_PROBED: Final = 200


def _remember_key(tools_root: Path, interpreter: str, key: str) -> None:
    """Note which key the box's probe found for ``interpreter`` (the runner's pre-flight reads it next time)."""
    known = _probed_keys(tools_root)
    if known.get(interpreter) == key or not tools_root.parent.is_dir() or tools_root.is_symlink():
        return
    tools_root.mkdir(mode=0o755, exist_ok=True)  # the repository's folder under <data>/tools (the coordinator's)
    if tools_root.is_symlink() or not tools_root.is_dir():
        return
    known[interpreter] = key
    kept = dict(list(known.items())[-_MAX_PROBED:])
    staging = tools_root / f".{_PROBED}.{secrets.token_hex(6)}"
    staging.write_text(json.dumps(kept, sort_keys=True), encoding="utf-8")
    os.replace(staging, tools_root / _PROBED)


def _probed_keys(tools_root: Path) -> dict[str, str]:
    try:
        document = json.loads((tools_root / _PROBED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(name): str(key) for name, key in document.items()} if isinstance(document, dict) else {}


def _guessed_key(interpreter: str, tools_root: Path) -> str | None:
    """The overlay key of ``interpreter`` as the host sees it: what the box's probe found for it last time, else
    for a virtual environment its ``lib/pythonX.Y`` folder and this machine's platform; else None."""
    if (known := _probed_keys(tools_root).get(interpreter)) is not None:
        return known
    prefix = Path(interpreter).parent.parent
    if not os.path.isabs(interpreter) or not (prefix / "pyvenv.cfg").is_file():
        return None
    versions = sorted(found.name.removeprefix("python") for found in prefix.glob("lib/python3.*"))
    if len(versions) != 1:
        return None
    platform = re.sub(r"[^A-Za-z0-9]+", "_", sysconfig.get_platform())
    return f"{sys.implementation.name}-{versions[0]}-{platform}"


def repository_tools(tools_root: Path, repository_root: Path) -> Path:
    """The overlays of one repository: ``<tools>/repo-<sha256 of its resolved path, 16 hex>``. An overlay is
    installed by the repository's own interpreter in that task's box, so what one repository's environment did
    to an install must never reach another repository's checks: overlays are never shared across repositories."""
    digest = hashlib.sha256(os.fsencode(os.path.realpath(repository_root))).hexdigest()[:16]
    return tools_root / f"repo-{digest}"


def install_to_settle(interpreter: str, *, tools_root: Path, source: ToolSource | None,
                      tools: Sequence[CheckTool] = CHECK_TOOLS, search_path: str | None = None
                      ) -> tuple[str, ...] | None:
    """The install request a run should have decided before its checks start (the runner's pre-flight, so a
    person — or a headless run's pre-approved operations — decides it like the test command), or None when
    none can be made (no source) or, as far as the host can see, none is needed: the environment has every tool
    in its ``site-packages``, or a verified overlay of its key holds them. The box's probe decides at the stage;
    when this guess was wrong the install is asked for there and the stage is ``blocked`` until it is decided."""
    if source is None or source.declined is not None:
        return None
    found = interpreter if os.path.isabs(interpreter) else \
        shutil.which(interpreter, path=search_path) if search_path else None  # ``python3``: the one on PATH
    prefix = Path(found).parent.parent if found else Path("/nonexistent")
    in_venv = found is not None and (prefix / "pyvenv.cfg").is_file()
    if in_venv and all(any(prefix.glob(f"lib/python3*/site-packages/{tool.module}")) for tool in tools):
        return None
    key = _guessed_key(interpreter, tools_root)
    overlay = None if key is None else installed_overlay(tools_root, key)
    if overlay is not None and all(tool.name in overlay[1] for tool in tools):
        return None
    return install_argv(interpreter, source, tools)


_PROBE_KEY: Final = "interpreter-probe:"


def resolve_tools(ports: PipelinePorts, *, attempt: int, interpreter: str, test_argv: tuple[str, ...],
                  tools: Sequence[CheckTool] = CHECK_TOOLS,
                  probes: MutableMapping[str, object] | None = None) -> ToolResolution:
    """The check ``tools`` for ``interpreter``: the repository environment's own, else the overlay's, else
    installed into the overlay now (the ``install`` request) — or ``blocked`` (see the module docstring).

    The probe follows the test command's decision (``covered_by``: the same interpreter in the same box). With
    ``probes`` (the attempt's shared cache: :attr:`~codeflux.pipeline.atom_facts.AtomFacts.shared`) the probe asks
    about every tool of :data:`CHECK_TOOLS` at once and what it reported is kept there per interpreter, so the
    stages of one attempt that need check tools (the coverage map, the fuzzer) probe the interpreter once: the
    probe reports the repository environment's own tools, which nothing in the attempt changes (an install goes to
    the overlay, which is read from the data directory on every call)."""
    if probes is None:
        return _resolve_tools(ports, attempt=attempt, interpreter=interpreter, test_argv=test_argv, tools=tools,
                              probes=None)
    # the stages of one attempt may ask side by side (:mod:`~codeflux.pipeline.concurrency`): one probe and one
    # install into the overlay at a time, the others then read what it found
    guard = probes.setdefault(_GUARD_KEY, threading.Lock())
    if not isinstance(guard, _LOCK_TYPE):
        raise TypeError(f"{_GUARD_KEY} of the shared cache is not a lock")
    with guard:
        return _resolve_tools(ports, attempt=attempt, interpreter=interpreter, test_argv=test_argv, tools=tools,
                              probes=probes)


_GUARD_KEY: Final = "interpreter-probe-guard"
_LOCK_TYPE: Final = type(threading.Lock())


def _resolve_tools(ports: PipelinePorts, *, attempt: int, interpreter: str, test_argv: tuple[str, ...],
                   tools: Sequence[CheckTool], probes: MutableMapping[str, object] | None) -> ToolResolution:
    commands, task_id = ports.commands, ports.facts.task_id
    asked = tuple(dict.fromkeys((*tools, *CHECK_TOOLS))) if probes is not None else tuple(tools)
    probe = probe_argv(interpreter, asked)
    cached = None if probes is None else probes.get(_PROBE_KEY + interpreter)
    if isinstance(cached, _Probe) and all(tool.name in cached.facts.tools for tool in tools):
        facts, probe = cached.facts, cached.argv
    else:
        run = commands.run_check_command(task_id, probe, attempt=attempt, covered_by=test_argv)
        if not run.ran:
            return ToolResolution(interpreter=interpreter, probe_argv=probe,
                                  blocked=f"the interpreter could not be asked for its check tools: {run.refusal}")
        probed = _probed(run.stdout)
        if probed is None:
            said = (run.stderr or run.stdout).strip()[-300:]
            return ToolResolution(interpreter=interpreter, probe_argv=probe,
                                  blocked=f"{interpreter} did not report its version and platform ({run.state}, "
                                          f"exit {run.exit_code}: {said}); the check tools cannot be chosen")
        facts = probed
        if probes is not None:
            probes[_PROBE_KEY + interpreter] = _Probe(facts=facts, argv=probe)
    own = {tool.name: facts.tools.get(tool.name) for tool in tools}
    missing = [tool for tool in tools if own[tool.name] is None]
    root = repository_tools(commands.tools_directory(), ports.facts.worktree.repo_root)
    _remember_key(root, interpreter, facts.key)
    provided = [ProvidedTool(name=tool.name, version=_text(found.get("version")), provided_by=REPOSITORY_ENVIRONMENT,
                             location=_text(found.get("location")))
                for tool in tools if (found := own[tool.name]) is not None]
    if not missing:
        return ToolResolution(interpreter=interpreter, tools=tuple(provided), key=facts.key, probe_argv=probe)
    overlay = installed_overlay(root, facts.key)
    install: dict[str, object] | None = None
    if overlay is None or any(tool.name not in overlay[1] for tool in missing):
        installed = _install(ports, attempt=attempt, interpreter=interpreter, key=facts.key, root=root)
        if isinstance(installed, str):
            names = ", ".join(tool.name for tool in missing)
            return ToolResolution(interpreter=interpreter, tools=tuple(provided), key=facts.key, probe_argv=probe,
                                  blocked=f"{names} is not in the repository's environment ({interpreter}) and "
                                          f"codeflux's overlay could not provide it: {installed}; to fix it, "
                                          f"{_fix_for(interpreter, missing)}")
        overlay, install = installed
    site, versions = overlay
    provided += [ProvidedTool(name=tool.name, version=versions.get(tool.name), provided_by=OVERLAY,
                              location=str(site)) for tool in missing]
    order = {tool.name: index for index, tool in enumerate(tools)}
    return ToolResolution(interpreter=interpreter, tools=tuple(sorted(provided, key=lambda item: order[item.name])),
                          overlay_site=site, key=facts.key, install=install, probe_argv=probe)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


_MAX_WHEELS: Final = 200
_MAX_WHEEL_BYTES: Final = 256 * 1024 * 1024


def _copy_wheels(wheelhouse: Path, target: Path) -> str | None:
    """Copy the wheelhouse's wheels (regular ``*.whl`` files, no link, bounded) into ``target`` — the install's own
    folder in the task's TMPDIR, which the box shows; None when done, else why not."""
    try:
        wheels = sorted(entry for entry in wheelhouse.iterdir() if entry.name.endswith(".whl")
                        and not entry.is_symlink() and entry.is_file())
    except OSError as error:
        return f"the wheelhouse {wheelhouse} cannot be read ({type(error).__name__})"
    if len(wheels) > _MAX_WHEELS or sum(wheel.stat().st_size for wheel in wheels) > _MAX_WHEEL_BYTES:
        return f"the wheelhouse {wheelhouse} holds more than {_MAX_WHEELS} wheels or 256 MiB"
    target.mkdir(mode=0o700)
    for wheel in wheels:
        shutil.copyfile(wheel, target / wheel.name, follow_symlinks=False)
    return None


def _install(ports: PipelinePorts, *, attempt: int, interpreter: str, key: str, root: Path
             ) -> tuple[tuple[Path, Mapping[str, str]], dict[str, object]] | str:
    """Install every tool of :data:`CHECK_TOOLS` for ``key`` — whichever one a check asked for, so the one request
    is the pre-flight's and the new overlay (replacing the key's older one) holds them all (see the module
    docstring); the overlay and the install's evidence, or why it was not installed."""
    tools = CHECK_TOOLS
    commands, task_id = ports.commands, ports.facts.task_id
    source = commands.tool_source()
    if source is None:
        return "no tool source is configured (no wheelhouse or index)"
    if source.declined is not None:
        return source.declined
    argv = install_argv(interpreter, source, tools)
    landing = commands.temp_directory(task_id) / INSTALL_TEMP
    shutil.rmtree(landing, ignore_errors=True)
    try:
        landing.mkdir(mode=0o700, parents=True)
        if source.wheelhouse is not None and (copied := _copy_wheels(source.wheelhouse, landing / WHEELS_FOLDER)):
            return copied
        if source.own and (rebuilt := rebuild_wheels((tool.name for tool in tools), landing / WHEELS_FOLDER)):
            return f"codeflux's own check tools could not be prepared: {rebuilt}"
        run = commands.run_check_command(task_id, argv, attempt=attempt, working_directory=INSTALL_WORKING_DIRECTORY,
                                         own_decision=True)
        evidence: dict[str, object] = {"argv": list(argv), "source": source.describe(), "request_id": run.request_id,
                                       "exit_code": run.exit_code}
        if not run.ran:
            return f"the install request was not run ({run.refusal})"
        if run.exit_code != 0:
            tail = " | ".join(line.strip() for line in (run.stderr or run.stdout).strip().splitlines()[-3:])
            return f"the install failed (exit {run.exit_code}): {tail[:400]}"
        shutil.rmtree(landing / WHEELS_FOLDER, ignore_errors=True)
        left = sorted(entry.name for entry in landing.iterdir()) if landing.is_dir() else []
        if landing.is_symlink() or left != ["site"]:
            return f"the install left something other than a site folder in $TMPDIR/{INSTALL_TEMP}"
        verified = verify_installed(landing / "site", tools)
        if isinstance(verified, str):
            return verified
        manifest = {"key": key, "tools": verified, "source": source.describe(), "request_id": run.request_id}
        site = _move_into_place(root, key, landing / "site", manifest)
        evidence["installed"] = verified
        return (site, verified), evidence
    finally:
        shutil.rmtree(landing, ignore_errors=True)

