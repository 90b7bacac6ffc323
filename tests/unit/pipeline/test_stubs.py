"""An atom's stub (issue 17, stage 8): only that function's body becomes ``raise NotImplementedError``; its
docstring, signature and decorators stay, and everything else of the file is byte for byte the same."""

from __future__ import annotations

from codeflux.pipeline.stubs import stub_atom

SOURCE = (
    "import functools\n\n\n"
    "@functools.cache\n"
    "def add(a, b):\n"
    '    """Add two numbers."""\n'
    "    return a + b  # keep me? no\n\n\n"
    "class Box:\n"
    "    def get(self): return 1\n\n"
    "    async def put(self, value):\n"
    "        def inner():\n"
    "            return value\n"
    "        return inner()\n"
)


def test_a_decorated_function_keeps_its_decorator_signature_and_docstring() -> None:
    stubbed = stub_atom(SOURCE, local_name="add", first_line=4)
    assert stubbed is not None
    assert stubbed.startswith("import functools\n\n\n@functools.cache\ndef add(a, b):\n"
                              '    """Add two numbers."""\n'
                              "    raise NotImplementedError('codeflux stub of add')\n")
    assert stubbed.split("class Box:", 1)[1] == SOURCE.split("class Box:", 1)[1]


def test_a_one_line_method_and_a_nested_function_are_found_by_their_local_name() -> None:
    one_line = stub_atom(SOURCE, local_name="Box.get", first_line=11)
    assert one_line is not None and "    def get(self):\n        raise NotImplementedError" in one_line
    inner = stub_atom(SOURCE, local_name="Box.put.inner", first_line=14)
    assert inner is not None and "return inner()" in inner and "return value" not in inner


def test_a_name_at_another_line_or_a_file_that_does_not_parse_gives_no_stub() -> None:
    assert stub_atom(SOURCE, local_name="add", first_line=7) is None  # not where it starts
    assert stub_atom(SOURCE, local_name="missing", first_line=4) is None
    assert stub_atom("def broken(:\n", local_name="broken", first_line=1) is None
