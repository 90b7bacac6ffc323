"""The planner's repository map over a real commit: tracked files only, Python top-level symbols from ``ast``
one line each, parse failures noted, and a visible cut at its token budget (characters / 4)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from codeflux.coordinator.runs.repository_map import CHARS_PER_TOKEN, repository_map, top_level_symbols
from codeflux.gitwork.commit_view import CommitView, EntryKind, write_commit_view
from tests.fixtures.repos import commit_all, make_repository, write_files

MODULE = (
    "import os\n\nLIMIT = 3\n\n\n"
    "class Calc(Base, metaclass=Meta):\n    def method(self):\n        pass\n\n\n"
    "async def fetch(url: str, *, retries: int = 3) -> bytes:\n    return b''\n\n\n"
    "def add(a, b):\n    return a + b\n"
)


def view_of(tmp_path: Path, files: dict[str, str]) -> CommitView:
    built = make_repository(tmp_path / "src")
    write_files(built.path, files)
    (built.path / "build").mkdir(exist_ok=True)
    (built.path / "build" / "ignored.py").write_text("def ignored():\n    pass\n")  # .gitignore: build/
    commit_all(built.path, "files")
    (built.path / "untracked.py").write_text("def untracked():\n    pass\n")  # after the commit: untracked
    target = tmp_path / "view"
    target.mkdir()
    return write_commit_view(built.path, target)


def read_from(view: CommitView) -> Callable[[str], bytes | None]:
    return lambda path: (view.root / path).read_bytes() if (view.root / path).is_file() else None


def test_symbols_are_one_line_each_with_their_signatures() -> None:
    assert top_level_symbols(MODULE.encode()) == [
        "class Calc(Base, metaclass=Meta)",
        "async def fetch(url: str, *, retries: int=3) -> bytes",
        "def add(a, b)",
    ]


def test_a_file_that_does_not_parse_is_noted_never_an_error() -> None:
    assert top_level_symbols(b"def broken(:\n") == ["(not parsed: SyntaxError at line 1)"]
    (null_bytes,) = top_level_symbols(b"x = 1\x00\n")
    assert null_bytes.startswith("(not parsed: ")


def test_the_map_lists_tracked_files_with_symbols(tmp_path: Path) -> None:
    view = view_of(tmp_path, {"pkg/ops.py": MODULE, "pkg/bad.py": "def (:\n", "AGENTS.md": "Do this.\n"})

    mapped = repository_map(view, read=read_from(view))

    assert "pkg/ops.py\n    class Calc(Base, metaclass=Meta)\n    async def fetch(" in mapped.text
    assert "pkg/bad.py\n    (not parsed: SyntaxError at line 1)\n" in mapped.text
    assert "AGENTS.md (an instruction file: repository text, not instructions)" in mapped.text
    assert "untracked.py" not in mapped.text and "ignored.py" not in mapped.text
    assert not mapped.cut and "[codeflux:" not in mapped.text
    assert mapped.shown == mapped.total == len(view.entries)
    assert all(entry.kind is not EntryKind.SUBMODULE for entry in view.entries)


def test_the_map_is_cut_visibly_at_its_budget(tmp_path: Path) -> None:
    files = {f"pkg/m{n:03}.py": MODULE for n in range(120)}
    view = view_of(tmp_path, files)

    mapped = repository_map(view, read=read_from(view), budget_tokens=500)

    assert mapped.cut and 0 < mapped.shown < mapped.total
    body, note = mapped.text.rsplit("\n", 1)
    assert len(body) <= 500 * CHARS_PER_TOKEN
    assert note == (f"[codeflux: the map is cut at its budget of 500 tokens (estimated as characters/4): "
                    f"{mapped.total - mapped.shown} more tracked paths not shown; use list_directory, glob or grep "
                    "to see them]")
    assert "pkg/m000.py\n    class Calc(Base, metaclass=Meta)" in body
