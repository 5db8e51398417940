"""The examples in the package's docstrings run and print what they show (``doctest``), so that a renamed field or a
changed result cannot leave a wrong example behind. Examples that need a table or a session are marked
``# doctest: +SKIP`` in place."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import evt_toolkit

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(evt_toolkit.__path__, "evt_toolkit.") if not m.name.endswith(".__main__")
)


def test_the_walk_finds_the_package() -> None:
    assert len(MODULES) > 100, MODULES
    assert "evt_toolkit.format.table_version" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    failures: list[str] = []
    for test in finder.find(module, name):
        runner.run(test, out=failures.append)
    assert not failures, "".join(failures)
