"""The adapters watch the coordinator through its hook points (:mod:`codeflux.coordinator.hooks`), never by
subclassing it: no class in ``cli``, ``services`` or ``server`` derives from a class of ``codeflux.coordinator``
(a subclass that overrides ``ToolDriver.execute`` or ``TaskService.start_run`` to watch them would run its code
inside the coordinator's calls, and could change their outcome). Implementing a ``Protocol`` is fine."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import codeflux.cli
import codeflux.server
import codeflux.services

ADAPTERS = (codeflux.cli, codeflux.services, codeflux.server)


def _modules() -> list[ModuleType]:
    found = []
    for package in ADAPTERS:
        found.append(package)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            found.append(importlib.import_module(info.name))
    return found


def _coordinator_bases(cls: type) -> list[str]:
    return [f"{base.__module__}.{base.__qualname__}" for base in cls.__mro__[1:]
            if base.__module__.startswith("codeflux.coordinator") and not getattr(base, "_is_protocol", False)]


MODULES = _modules()


def test_the_scan_sees_the_adapters() -> None:
    names = {module.__name__ for module in MODULES}
    assert {"codeflux.cli.run", "codeflux.cli.start", "codeflux.services.methods"} <= names


@pytest.mark.parametrize("module", MODULES, ids=lambda module: module.__name__)
def test_no_adapter_class_subclasses_a_coordinator_class(module: ModuleType) -> None:
    offenders = {f"{cls.__qualname__}({', '.join(bases)})"
                 for _, cls in inspect.getmembers(module, inspect.isclass)
                 if cls.__module__ == module.__name__ and (bases := _coordinator_bases(cls))}
    assert offenders == set(), f"{module.__name__} observes the coordinator by subclassing it; subscribe instead"


def test_the_check_catches_a_subclass_of_the_tool_driver() -> None:
    from codeflux.coordinator.runs.tool_driver import ToolDriver

    class Watching(ToolDriver):
        pass

    assert _coordinator_bases(Watching) == ["codeflux.coordinator.runs.tool_driver.ToolDriver"]
