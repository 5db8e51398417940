"""Print the import graph's cycles and layer violations of ``evt_toolkit``; exit 1 if there are any.

Every ``import`` counts, including those inside functions and under ``if TYPE_CHECKING:`` (a lazy import that dodges
a cycle is still a cycle). Layers, lowest first — a module may import its own layer and the layers below it:

    errors, faults            the hierarchy of errors, named kill points
    format                    bytes <-> typed records, pure
    storage                   a table's files: read, write, list, copy, link, delete, ownership records
    table                     config, timeline, file-system view, instant visibility, retention, link graph
    read                      queries over slices
    write                     ingestion (its SIMPLE index reads the keys a compaction's logs hold)
    compaction                strategies, plans, schedule, run, validate, freshness, metrics, preview
    services                  clean, rollback, unschedule, metadata-table repair
    spark                     data source, executors, catalog sync
    api                       the HudiTable facade
    widgets, cli, demo        what people touch

Usage: ``python scripts/check_layers.py [--graph]`` (``--graph`` prints every edge).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "evt_toolkit"
PACKAGE = "evt_toolkit"

LAYERS: dict[str, int] = {
    "errors": 0,
    "faults": 0,
    "format": 1,
    "storage": 2,
    "table": 3,
    "read": 4,
    "write": 5,
    "compaction": 6,
    "services": 7,
    "spark": 8,
    "api": 9,
    "widgets": 10,
    "cli": 10,
    "demo": 10,
}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) < 2:
        return None  # the package itself (evt_toolkit/__init__.py re-exports the public surface)
    return parts[1]


def imports_of(path: Path, module: str, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            # `from pkg import sub` imports the submodule when there is one; it counts as importing the package
            # only for names that are not submodules (every submodule import runs the package's __init__, as
            # `from pkg.sub import x` does, so that part is not an edge of its own).
            subs = [f"{prefix}.{a.name}" for a in node.names if f"{prefix}.{a.name}" in known]
            targets = subs if len(subs) == len(node.names) else [prefix, *subs]
        for t in targets:
            if not t.startswith(PACKAGE):
                continue
            # The deepest known module the name refers to.
            parts = t.split(".")
            while parts and ".".join(parts) not in known:
                parts.pop()
            if parts:
                target = ".".join(parts)
                if target != module:
                    out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    files = sorted(ROOT.rglob("*.py"))
    known = {module_name(f) for f in files}
    return {module_name(f): imports_of(f, module_name(f), known) for f in files}


def strongly_connected(g: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative); returns components with more than one module, or a self-loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(g):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(g[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            if children:
                child = children.pop()
                if child not in g:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, sorted(g[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def violations(g: dict[str, set[str]]) -> list[str]:
    out = []
    for mod, targets in sorted(g.items()):
        src = layer_of(mod)
        if src is None:
            continue
        if src not in LAYERS:
            out.append(f"{mod}: module outside every layer (add its folder to LAYERS)")
            continue
        for t in sorted(targets):
            dst = layer_of(t)
            if dst is None or dst not in LAYERS:
                continue
            if LAYERS[dst] > LAYERS[src]:
                out.append(f"{mod} ({src}) imports {t} ({dst}): a lower layer must not look up")
            elif LAYERS[dst] == LAYERS[src] and dst != src:
                out.append(f"{mod} ({src}) imports {t} ({dst}): sibling layers stay apart")
    return out


def main(argv: list[str]) -> int:
    g = graph()
    if "--graph" in argv:
        for mod, targets in sorted(g.items()):
            for t in sorted(targets):
                print(f"{mod} -> {t}")
    cycles = strongly_connected(g)
    bad = violations(g)
    edges = sum(len(v) for v in g.values())
    print(f"{len(g)} modules, {edges} imports, {len(cycles)} import cycle(s), {len(bad)} layer violation(s)")
    for comp in cycles:
        print(f"cycle of {len(comp)}: {' <-> '.join(comp)}")
    for line in bad:
        print(f"violation: {line}")
    return 1 if cycles or bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
