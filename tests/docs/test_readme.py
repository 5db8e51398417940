"""The README matches the code: every error class is listed, every layer folder is in the layout table, and no link
points outside the repository."""

from __future__ import annotations

import inspect
import re

import evt_toolkit
import evt_toolkit.errors as errors
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def test_every_error_class_is_listed_and_exported() -> None:
    classes = {n for n, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.EvtError)}
    listed = set(re.findall(r"`(\w+Error)`", _section("Errors")))
    assert classes - {"EvtError"} <= listed, sorted(classes - listed - {"EvtError"})
    assert listed <= classes, sorted(listed - classes)
    assert all(getattr(evt_toolkit, n, None) is getattr(errors, n) for n in classes), "exported from evt_toolkit"


def test_every_package_folder_is_in_the_layout_table() -> None:
    layout = _section("Layout")
    folders = sorted(p.name for p in (REPO_ROOT / "evt_toolkit").iterdir() if (p / "__init__.py").exists())
    missing = [f for f in folders if f"`{f}/`" not in layout and f"evt_toolkit/{f}/" not in layout]
    assert not missing, missing


def test_links_stay_inside_the_repository() -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if not t.startswith(("http://", "https://", "mailto:"))]
    assert local, "the README links its own docs"
    outside = [t for t in local if t.startswith(("..", "/")) or not (REPO_ROOT / t).exists()]
    assert not outside, outside
