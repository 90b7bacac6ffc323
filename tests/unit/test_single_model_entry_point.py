"""Exactly one code path talks to a model: ``codeflux/coordinator/spending/gateway.py``.

The scan parses every module under ``codeflux/`` and fails when a module other than the gateway calls
anything's ``.complete(…)`` (the one method of a model adapter), or when a module outside
``codeflux/providers/`` and the gateway constructs a model adapter class — directly, through an import
alias, or as an attribute (``anthropic.AnthropicAdapter(…)``). Adapter classes are found, not listed:
every class under ``providers/`` that defines ``complete``. Tests and benchmarks live outside
``codeflux/`` and may construct and call adapters.
"""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[2] / "codeflux"
GATEWAY = Path("coordinator/spending/gateway.py")
PROVIDERS = Path("providers")


def adapter_classes(root: Path) -> frozenset[str]:
    """Names of the classes under ``providers/`` that define a ``complete`` method, or inherit one."""
    classes: dict[str, tuple[set[str], bool]] = {}
    for path in sorted((root / PROVIDERS).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = {base.id if isinstance(base, ast.Name) else base.attr for base in node.bases
                         if isinstance(base, ast.Name | ast.Attribute)}  # fmt: skip
                defines = any(isinstance(item, ast.FunctionDef) and item.name == "complete" for item in node.body)
                classes[node.name] = (bases, defines)
    found = {name for name, (_, defines) in classes.items() if defines}
    while True:
        more = {name for name, (bases, _) in classes.items() if bases & found} - found
        if not more:
            return frozenset(found)
        found |= more


def find_model_calls(source: str, *, where: Path, adapters: frozenset[str]) -> list[str]:
    """Violations in one module: ``where`` is its path relative to ``codeflux/``."""
    tree = ast.parse(source)
    may_call = where == GATEWAY
    may_construct = may_call or where.parts[:1] == PROVIDERS.parts
    aliases = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               for alias in node.names if alias.name in adapters}  # fmt: skip
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "complete" and not may_call:
            found.append(f"{where}:{node.lineno} calls .complete(); only {GATEWAY} may call a model")
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if called is not None and (called in adapters or called in aliases) and not may_construct:
            found.append(f"{where}:{node.lineno} constructs the model adapter {called}; only providers/ and "
                         f"{GATEWAY} may")
    return found


def test_adapter_classes_are_found_by_their_complete_method() -> None:
    assert {"AnthropicAdapter", "ChatCompletionsAdapter", "OpenAIAdapter", "OpenAICompatibleAdapter",
            "ScriptedAdapter"} <= adapter_classes(SOURCE_ROOT)


def test_only_the_gateway_calls_a_model_and_no_other_module_builds_an_adapter() -> None:
    adapters = adapter_classes(SOURCE_ROOT)
    violations = []
    for path in sorted(SOURCE_ROOT.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        relative = path.relative_to(SOURCE_ROOT)
        violations += find_model_calls(path.read_text(), where=relative, adapters=adapters)
    assert violations == []


def test_the_scan_catches_a_call_an_alias_and_an_attribute_construction() -> None:
    adapters = frozenset({"AnthropicAdapter"})
    source = (
        "from codeflux.providers.anthropic import AnthropicAdapter as Claude\n"
        "import codeflux.providers.anthropic as anthropic\n"
        "def sneak(request):\n"
        "    Claude().complete(request)\n"
        "    anthropic.AnthropicAdapter()\n"
    )
    found = find_model_calls(source, where=Path("coordinator/runs/loop.py"), adapters=adapters)

    assert len(found) == 3
    assert any("calls .complete()" in item for item in found)
    assert sum("constructs the model adapter" in item for item in found) == 2
    assert find_model_calls(source, where=GATEWAY, adapters=adapters) == []
    in_providers = find_model_calls(source, where=Path("providers/x.py"), adapters=adapters)
    assert len(in_providers) == 1 and "calls .complete()" in in_providers[0]
