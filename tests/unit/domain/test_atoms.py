"""Atoms: the functions and methods a diff adds or changes, compared by syntax tree (issue 17)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.atoms import AtomChange, atoms_between, changed_lines, module_name_of

BASE = '''\
import os


def add(a, b):
    return a + b


class Calc:
    def total(self, items):
        return sum(items)

    def _reset(self):
        self.value = 0


def untouched():
    def inner():
        return 1
    return inner()
'''


def test_a_changed_body_an_added_method_and_an_added_function_are_atoms_and_nothing_else() -> None:
    new = BASE.replace("return a + b", "return b + a").replace(
        "    def _reset(self):", "    def mean(self, items: list[float]) -> float:\n"
                                 "        return sum(items) / len(items)\n\n    def _reset(self):")
    new += "\n\nasync def fetch(url: str) -> bytes:\n    return b''\n"

    found = atoms_between("calc/ops.py", BASE, new, module="calc.ops")

    assert found.problem is None
    by_name = {atom.qualified_name: atom for atom in found.atoms}
    assert set(by_name) == {"calc.ops.add", "calc.ops.Calc.mean", "calc.ops.fetch"}
    assert by_name["calc.ops.add"].change is AtomChange.CHANGED and by_name["calc.ops.add"].changed == (5,)
    mean = by_name["calc.ops.Calc.mean"]
    assert mean.change is AtomChange.ADDED and mean.is_method and mean.public
    assert mean.signature == "def mean(self, items: list[float]) -> float"
    assert by_name["calc.ops.fetch"].is_async and by_name["calc.ops.fetch"].signature.startswith("async def fetch(")


def test_comments_and_spacing_alone_change_no_atom_but_their_lines_are_changed_lines() -> None:
    new = BASE.replace("    return a + b", "    # adds\n    return a  +  b")

    found = atoms_between("calc/ops.py", BASE, new, module="calc.ops")

    assert found.atoms == () and found.changed == (5, 6)


def test_a_change_in_a_nested_function_makes_the_enclosing_function_the_atom() -> None:
    found = atoms_between("m.py", BASE, BASE.replace("return 1", "return 2"), module="m")

    assert [atom.local_name for atom in found.atoms] == ["untouched"]


def test_an_added_file_makes_every_function_added_and_private_ones_are_marked() -> None:
    found = atoms_between("pkg/new.py", None, BASE, module="pkg.new")

    assert {atom.change for atom in found.atoms} == {AtomChange.ADDED}
    assert {atom.local_name: atom.public for atom in found.atoms} == {
        "add": True, "Calc.total": True, "Calc._reset": False, "untouched": True}


def test_a_decorator_is_part_of_the_atom() -> None:
    new = BASE.replace("def add(a, b):", "@cache\ndef add(a, b):")

    (atom,) = atoms_between("m.py", BASE, new, module="m").atoms

    assert (atom.first_line, atom.changed) == (4, (4,))


def test_a_file_that_does_not_parse_has_no_atoms_and_says_why() -> None:
    found = atoms_between("m.py", BASE, "def broken(:\n", module="m")

    assert found.atoms == () and found.problem is not None and "line 1" in found.problem


def test_module_names_follow_the_import_path() -> None:
    assert module_name_of("src/pkg/mod.py", src_layout=True) == "pkg.mod"
    assert module_name_of("src/pkg/mod.py") == "src.pkg.mod"
    assert module_name_of("pkg/__init__.py") == "pkg"
    assert module_name_of("tool.py") == "tool"


lines = st.lists(st.sampled_from(["a", "b", "c", "", "  x"]), max_size=12)


@given(old=lines, new=lines)
def test_changed_lines_are_exactly_the_new_lines_not_carried_over(old: list[str], new: list[str]) -> None:
    numbers = changed_lines("".join(f"{line}\n" for line in old), "".join(f"{line}\n" for line in new))

    assert all(1 <= n <= len(new) for n in numbers) and list(numbers) == sorted(set(numbers))
    kept = [line for n, line in enumerate(new, start=1) if n not in numbers]
    # what is not marked changed is a subsequence of the old lines, in order
    remaining = iter(old)
    assert all(any(line == candidate for candidate in remaining) for line in kept)


@given(st.lists(st.sampled_from(["a", "b", ""]), max_size=10))
def test_an_unchanged_source_has_no_changed_lines_and_no_atoms(text: list[str]) -> None:
    source = "\n".join(text)
    assert changed_lines(source, source) == ()
    assert atoms_between("m.py", BASE, BASE, module="m").atoms == ()
