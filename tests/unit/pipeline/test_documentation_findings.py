"""Stage 17's docstring reading: Google, NumPy and Sphinx sections compared with the signature and the body."""

from __future__ import annotations

import ast

import pytest

from codeflux.domain.atoms import atoms_between
from codeflux.pipeline.documentation import documentation_findings, sections_of


def findings_of(source: str, name: str) -> tuple[bool, list[str]]:
    """The gate and the findings of the atom ``name`` (a local name) of ``source``."""
    atom = next(atom for atom in atoms_between("m.py", None, source, module="m").atoms if atom.local_name == name)
    tree = ast.parse(source)
    klass = next((node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                  and any(getattr(child, "name", None) == atom.name for child in node.body)), None)
    function = next(node for node in ast.walk(tree)
                    if isinstance(node, ast.FunctionDef) and node.name == atom.name)
    stated, found, _ = documentation_findings(atom, function, klass)
    return stated, found


@pytest.mark.parametrize("docstring", [
    "Add.\n\nArgs:\n    a (int): one.\n    b: two,\n        continued.\n\nReturns:\n    The sum.\n",
    "Add.\n\nParameters\n----------\na, b : int\n    The numbers.\n\nReturns\n-------\nint\n",
    "Add.\n\n:param int a: one.\n:param b: two.\n:rtype: int\n",
], ids=["google", "numpy", "sphinx"])
def test_each_style_documents_parameters_and_returns(docstring: str) -> None:
    sections = sections_of(docstring)
    assert sections.parameters == {"a", "b"}
    assert sections.returns


def test_parameters_documented_unlike_the_signature_are_findings() -> None:
    source = ('def f(a, b, *args, **kwargs):\n    """Do f.\n\n    Args:\n        a: one.\n        c: gone.\n'
              '        *args: more.\n    """\n')
    stated, found = findings_of(source, "f")
    assert stated
    assert found == ["undocumented-parameter: b is not documented", "undocumented-parameter: kwargs is not documented",
                     "unknown-parameter: documents c, which is not a parameter"]


def test_a_docstring_without_a_parameter_section_for_a_function_with_parameters_is_a_finding() -> None:
    stated, found = findings_of('def f(a, b):\n    """Do f with a and b."""\n', "f")
    assert stated
    assert found == ["no-parameter-section: documents none of its parameters (a, b)"]


def test_returns_and_raises_must_be_documented_when_the_body_returns_and_raises() -> None:
    source = ('def f():\n    """Do f."""\n    if g():\n        raise KeyError("k")\n    def inner():\n'
              '        raise OSError\n    return 1\n')
    _, found = findings_of(source, "f")
    assert found == ["no-returns-section: returns a value but documents no return",
                     "no-raises-section: raises KeyError but documents no raises"]  # inner's raise is its own


def test_an_exception_the_raises_section_does_not_name_is_a_finding() -> None:
    source = ('def f():\n    """Do f.\n\n    Raises:\n        KeyError: when.\n    """\n    if g():\n'
              '        raise KeyError("k")\n    raise errors.StaleError()\n')
    _, found = findings_of(source, "f")
    assert found == ["undocumented-exception: raises StaleError, not named in its raises section"]


def test_self_properties_and_init_documented_on_its_class_are_understood() -> None:
    source = ('class C:\n    """A thing.\n\n    Args:\n        size: how big.\n    """\n\n'
              '    def __init__(self, size):\n        self.size = size\n\n'
              '    @property\n    def double(self):\n        """Twice the size."""\n        return self.size * 2\n')
    assert findings_of(source, "C.__init__") == (True, [])
    assert findings_of(source, "C.double") == (True, [])


def test_no_docstring_or_one_that_opens_with_a_section_states_no_purpose() -> None:
    assert findings_of("def f():\n    return None\n", "f") == (
        False, ["missing-docstring: no docstring states its purpose"])
    stated, found = findings_of('def f(a):\n    """Args:\n        a: one.\n    """\n', "f")
    assert not stated and found[0].startswith("missing-purpose")
