"""Stage 13's mutants (libcst): only on the wanted lines of the one atom, one place each, docstrings left alone."""

from __future__ import annotations

from codeflux.pipeline.mutants import mutant_diff, mutants_of_atom

SOURCE = '''def other(a):
    return a + 1


class Box:
    def check(self, value, low):
        """Doc string."""
        if value < low and not self.flag:
            self.log("low")
        total = value * 2
        total += 3
        return total == 4 or True
'''


def test_every_operator_applies_on_the_wanted_lines_of_the_atom_only() -> None:
    found = mutants_of_atom(SOURCE, local_name="Box.check", first_line=6, lines=[7, 8, 9, 10, 11, 12])
    assert found is not None
    pairs = {(mutant.operator, mutant.original, mutant.replacement) for mutant in found}
    assert pairs == {
        ("comparison", "value < low", "value <= low"), ("boolean", "value < low and not self.flag",
                                                        "value < low or not self.flag"),
        ("boolean", "not self.flag", "self.flag"), ("removed-call", 'self.log("low")', "pass"),
        ("constant", '"low"', '""'), ("arithmetic", "value * 2", "value / 2"), ("constant", "2", "(2 + 1)"),
        ("arithmetic", "total += 3", "total -= 3"), ("constant", "3", "(3 + 1)"),
        ("return-value", "return total == 4 or True", "return None"), ("boolean", "total == 4 or True",
                                                                       "total == 4 and True"),
        ("comparison", "total == 4", "total != 4"), ("constant", "4", "(4 + 1)"), ("boolean", "True", "False"),
    }
    assert all(mutant.source != SOURCE and "Doc string." in mutant.source for mutant in found)
    assert all(mutant.source.splitlines()[:2] == SOURCE.splitlines()[:2] for mutant in found)  # other() untouched


def test_lines_outside_the_wanted_ones_are_never_mutated_and_the_diff_shows_the_one_change() -> None:
    found = mutants_of_atom(SOURCE, local_name="Box.check", first_line=6, lines=[10])
    assert found is not None and [mutant.line for mutant in found] == [10, 10]
    diff = mutant_diff("pkg/box.py", SOURCE, found[0])
    assert "-        total = value * 2\n+        total = value / 2\n" in diff and diff.count("\n-") == 1


def test_an_atom_that_is_not_found_or_a_source_that_does_not_parse_gives_none() -> None:
    assert mutants_of_atom(SOURCE, local_name="Box.missing", first_line=6, lines=[7]) is None
    assert mutants_of_atom("def broken(:\n", local_name="broken", first_line=1, lines=[1]) is None
    assert mutants_of_atom(SOURCE, local_name="other", first_line=1, lines=[2], limit=1) is not None
