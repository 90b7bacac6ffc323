"""Path findings: file-tool paths and command arguments that leave the worktree, enter .git or hold secrets.

File tools need ``read`` or ``task-write``; a path that is not a plain worktree-relative path adds
``outside-write`` (reads too), a ``.git`` component adds ``privileged``, a credential-looking path adds
``credential``. :func:`classify_file_tool` reads a file-tool request (and every path an ``apply_patch``
diff names); :func:`classify_command_path` applies the same facts to any argument of a command.
"""

from __future__ import annotations

import re
from typing import Final

from codeflux.authority.classify.classification import WorktreeFacts
from codeflux.authority.classify.findings import Findings, shown
from codeflux.authority.classify.shell import ASSIGNMENT
from codeflux.domain.capabilities import Capability
from codeflux.domain.tools import ArgumentType, BoundToolRequest, ToolName

_C = Capability

_CREDENTIAL_DIRECTORIES: Final = frozenset(
    {".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store", "keyrings", "gcloud"}
)
_CREDENTIAL_FILES: Final = frozenset(
    {
        ".netrc", "_netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc", ".env", ".envrc",
        ".vault-token", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "authorized_keys", "shadow",
        "gshadow", "environ", "credentials", "credentials.json", "kubeconfig", ".htpasswd",
    }
)  # fmt: skip
_CREDENTIAL_SUFFIXES: Final = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx")
_HARMLESS_ENV_SUFFIXES: Final = (".example", ".sample", ".template", ".dist")
_HARMLESS_DEVICES: Final = frozenset(
    {"/dev/null", "/dev/zero", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/random",
     "/dev/urandom"}
)  # fmt: skip
DRIVE: Final = re.compile(r"[A-Za-z]:")
_HOME_VARIABLE: Final = re.compile(r"\$(?:HOME\b|\{HOME\})")


def _components(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in {"", "."}]


def is_git_component(part: str) -> bool:
    # Case-insensitive file systems and Windows' trailing-dot/space trimming make these `.git` too.
    return part.lower().rstrip(" .") == ".git"


def _is_credential_path(path: str) -> bool:
    parts = [part.lower() for part in _components(path)]
    if any(part in _CREDENTIAL_DIRECTORIES for part in parts[:-1]):
        return True
    if not parts:
        return False
    name = parts[-1]
    if name in _CREDENTIAL_FILES or name in _CREDENTIAL_DIRECTORIES or name.endswith(_CREDENTIAL_SUFFIXES):
        return True
    return name.startswith(".env.") and not name.endswith(_HARMLESS_ENV_SUFFIXES)


def _tool_path_escape(path: str) -> str | None:
    """Why a file-tool path is not a plain worktree-relative path, or None if it is one."""
    checks: tuple[tuple[bool, str], ...] = (
        (path.strip() == "", "is empty"),
        (path.startswith(("/", "~")), "is absolute or home-relative"),
        ("\\" in path, "contains a backslash"),
        (":" in path or DRIVE.match(path) is not None, "contains a drive letter or colon"),
        (any(part != part.strip() for part in path.split("/")), "has a component with surrounding spaces"),
        (".." in path.split("/"), "climbs out with '..'"),
    )
    return next((why for failed, why in checks if failed), None)


def _classify_tool_path(path: str, *, writes: bool, facts: WorktreeFacts, out: Findings) -> None:
    escape = _tool_path_escape(path)
    if escape is not None:
        out.add(_C.OUTSIDE_WRITE, f"path {shown(path)} {escape}; it may leave the task worktree")
    if path in facts.escaping_paths:
        out.add(_C.OUTSIDE_WRITE, f"path {shown(path)} resolves outside the task worktree")
    if any(is_git_component(part) for part in path.split("/")):
        out.add(_C.PRIVILEGED, f"path {shown(path)} enters .git, whose hooks and config run code")
        if writes:
            out.add(_C.OUTSIDE_WRITE, f"path {shown(path)} writes into the user's repository metadata")
    if _is_credential_path(path):
        out.add(_C.CREDENTIAL, f"path {shown(path)} looks like a credential file")


def classify_command_path(argument: str, out: Findings) -> None:
    """Path facts that hold for any program: an argument naming a place outside, .git, or a secret."""
    candidates = [argument, argument.removeprefix("@")]
    if "=" in argument and (argument.startswith("-") or ASSIGNMENT.match(argument)):
        candidates.append(argument.split("=", 1)[1])
    candidates += [text[len("file://") :] for text in candidates if text.lower().startswith("file://")]
    for text in candidates:
        if "://" in text:
            continue
        if text not in _HARMLESS_DEVICES and (
            text.startswith(("/", "~")) or ".." in text.split("/") or _HOME_VARIABLE.search(text)
            or (DRIVE.match(text) and text[2:3] in {"/", "\\"})
        ):
            out.add(_C.OUTSIDE_WRITE, f"argument {shown(argument)} names a path outside the task worktree")
        if any(is_git_component(part) for part in text.split("/")):
            out.add(_C.PRIVILEGED, f"argument {shown(argument)} names .git, whose hooks and config run code")
            out.add(_C.OUTSIDE_WRITE, f"argument {shown(argument)} names the user's repository metadata")
        if _is_credential_path(text):
            out.add(_C.CREDENTIAL, f"argument {shown(argument)} names a credential file")


_PATCH_HEADER: Final = re.compile(r"^(?:--- |\+\+\+ |rename from |rename to |copy from |copy to )(.*)$")


def _patch_paths(patch: str) -> list[str]:
    """Every path a unified or git diff names (old and new sides, renames and copies)."""
    paths: list[str] = []
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            rest = line.removeprefix("diff --git ")
            old, separator, new = rest.rpartition(" b/")
            paths.extend([old, "b/" + new] if separator else [rest])
            continue
        match = _PATCH_HEADER.match(line)
        if match is not None:
            paths.append(match.group(1).split("\t", 1)[0])
    cleaned = []
    for path in paths:
        bare = path.strip('"') if path.startswith('"') else path
        if bare != "/dev/null":
            cleaned.append(bare[2:] if bare.startswith(("a/", "b/")) else bare)
    return cleaned


def classify_file_tool(request: BoundToolRequest, facts: WorktreeFacts, out: Findings) -> None:
    capability = request.descriptor.default_capability
    writes = capability is _C.TASK_WRITE
    verb = "writes inside" if writes else "reads"
    out.add(capability, f"{request.tool} {verb} the task worktree")
    for spec, value in request.typed_values():
        if spec.type in {ArgumentType.PATH, ArgumentType.GLOB} and isinstance(value, str):
            _classify_tool_path(value, writes=writes, facts=facts, out=out)
    patch = request.value("patch")
    if request.tool is ToolName.APPLY_PATCH and isinstance(patch, str):
        for path in _patch_paths(patch):
            _classify_tool_path(path, writes=True, facts=facts, out=out)
