"""Stage 14's own syntax-tree checks: exit outside main, assert in product code, deep nesting."""

from __future__ import annotations

from codeflux.pipeline.anti_patterns import own_findings


def rules(source: str, path: str = "pkg/m.py") -> list[tuple[int, str]]:
    return [(finding.line, finding.rule) for finding in own_findings(path, source)]


def test_exit_is_allowed_under_the_main_guard_and_in_a_main_module_only() -> None:
    source = ("import os, sys\n\ndef run():\n    quit()\n    os._exit(3)\n\n"
              "if __name__ == '__main__':\n    sys.exit(run())\nelse:\n    exit(1)\n")
    assert rules(source) == [(4, "exit-outside-main"), (5, "exit-outside-main"), (10, "exit-outside-main")]
    assert rules(source, "pkg/__main__.py") == []


def test_an_elif_chain_does_not_nest_but_six_blocks_in_a_function_do() -> None:
    chain = "def f(x):\n    if x == 1:\n        pass\n" + "".join(
        f"    elif x == {n}:\n        pass\n" for n in range(2, 12))
    assert rules(chain) == []
    deep = ("def f(x):\n    for a in x:\n        if a:\n            while a:\n                with a:\n"
            "                    try:\n                        if a:\n                            pass\n"
            "                    except Exception:\n                        raise\n")
    assert rules(deep) == [(7, "deep-nesting")]
    nested_function = "def f(x):\n    if x:\n        def g(y):\n            if y:\n                pass\n"
    assert rules(nested_function) == []  # a nested function starts counting again


def test_every_assert_in_product_code_is_a_finding() -> None:
    assert rules("def f(x):\n    assert x > 0, 'positive'\n    return x\n") == [(2, "assert-in-product-code")]
