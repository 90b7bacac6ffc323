"""Stage 18's call resolution: which calls of a diff's atom name another atom of the diff (pure syntax trees)."""

from __future__ import annotations

from codeflux.domain.atoms import atoms_between
from codeflux.pipeline.compositions import compositions_of

CALC = (
    "def add(a, b):\n    return a + b\n\n\n"
    "def total(values):\n    result = 0\n    for value in values:\n        result = add(result, value)\n"
    "    return add(result, 0)\n\n\n"
    "class Meter:\n    def read(self):\n        return self.scale(add(1, 2))\n\n"
    "    def scale(self, value):\n        return Meter.offset(value) * 2\n\n"
    "    @staticmethod\n    def offset(value):\n        return value + 1\n"
)
REPORT = (
    "import pkg.calc\nfrom pkg import calc as c\nfrom .calc import total as summed\n\n\n"
    "def report(values, callback):\n"
    "    callback(values)\n"                       # 7: a callable passed in is not resolved
    "    getattr(c, 'add')(1, 2)\n"                 # 8: nor getattr
    "    return summed(values), c.add(1, 2), pkg.calc.total(values), len(values)\n"  # 9
)


def subjects(*files: tuple[str, str, str]) -> dict[str, list[int]]:
    parsed = tuple(atoms_between(path, None, source, module=module) for path, module, source in files)
    return {item.subject: list(item.lines) for item in compositions_of(parsed)}


def test_calls_resolve_by_module_name_import_alias_module_attribute_and_self_or_class() -> None:
    found = subjects(("pkg/calc.py", "pkg.calc", CALC), ("pkg/report.py", "pkg.report", REPORT))

    assert found == {
        "pkg.calc.total -> pkg.calc.add": [8, 9],
        "pkg.calc.Meter.read -> pkg.calc.Meter.scale": [14],
        "pkg.calc.Meter.read -> pkg.calc.add": [14],
        "pkg.calc.Meter.scale -> pkg.calc.Meter.offset": [17],
        "pkg.report.report -> pkg.calc.total": [9],
        "pkg.report.report -> pkg.calc.add": [9],
    }


def test_an_atom_calling_only_itself_or_unchanged_code_has_no_composition() -> None:
    recursive = "def count(n):\n    return 0 if n == 0 else 1 + count(n - 1)\n\n\ndef size(x):\n    return len(x)\n"
    assert subjects(("pkg/r.py", "pkg.r", recursive)) == {}
