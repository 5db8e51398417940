"""JupyterLab in a real browser: run the notebooks and use the widgets as a data engineer would.

* notebook 03: run all cells, move the threshold slider with the keyboard (Home / End on the slider handle) and
  check that the totals (``selected logs: N``) and the plotly chart (trace data and the SVG bars) change;
* notebook 01: run all cells; in the inspector's block table sort by min event time, descending, and check the rows
  reorder; open a block's header and unfold its schema;
* notebook 02: run all cells; the distribution chart draws the logs against their replay position, rings the
  out-of-order ones and marks T;
* a runner notebook (written by the test, no Spark): only Schedule is enabled and highlighted at first; after a
  click Run is, and after Run the plan is done and Run is disabled again.

Screenshots go to ``test-artifacts/screenshots/``; with ``EVT_UPDATE_DOC_IMAGES=1`` the ones the README shows are
also written to ``docs/images/``.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import REPO_ROOT, LabServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = 240_000  # running a whole notebook: the demo table is prebuilt, so this is mostly kernel start-up
CHANGE_TIMEOUT_S = 30.0

_CHART_SIGNATURE_JS = """
root => {
  const gd = root.classList.contains('js-plotly-plot') ? root : root.querySelector('.js-plotly-plot');
  const data = gd && gd.data ? gd.data.map(t => [t.name, t.type, t.x, t.y]) : null;
  const bars = Array.from(root.querySelectorAll('.bars path, .point path')).map(p => p.getAttribute('d'));
  return {data: JSON.stringify(data), bars: bars.join('|'), barCount: bars.length};
}
"""


_PANEL_JS = """
name => {
  const app = window.jupyterapp;
  if (!app || !app.shell) return null;
  return Array.from(app.shell.widgets('main')).find(w => w.context && w.context.path === name) || null;
}
"""


def _open_and_run_all(page: Any, server: LabServer, notebook: str) -> None:
    # A workspace of its own per notebook, so the tabs of an earlier test are not restored next to it.
    workspace = re.sub(r"[^a-z0-9]", "-", notebook.lower())
    page.goto(server.url(f"/lab/workspaces/{workspace}/tree/{notebook}?reset"))
    page.wait_for_function(f"name => ({_PANEL_JS})(name) !== null", arg=notebook, timeout=RUN_TIMEOUT_MS)
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=RUN_TIMEOUT_MS)
    # The kernel must be up before "run all", else the first cells can be queued behind its start-up.
    page.wait_for_function(
        f"""name => {{
          const w = ({_PANEL_JS})(name);
          window.jupyterapp.shell.activateById(w.id);
          const k = w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
          return window.jupyterapp.shell.currentWidget === w && k && k.status === 'idle';
        }}""",
        arg=notebook,
        timeout=RUN_TIMEOUT_MS,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(
        f"""name => {{
          const w = ({_PANEL_JS})(name);
          const cells = w.content.widgets.filter(c => c.model.type === 'code');
          const k = w.sessionContext.session.kernel;
          return cells.every(c => c.model.executionCount !== null) && k.status === 'idle';
        }}""",
        arg=notebook,
        timeout=RUN_TIMEOUT_MS,
    )
    failures = page.evaluate(
        f"""name => ({_PANEL_JS})(name).content.widgets
              .filter(c => c.model.type === 'code')
              .flatMap(c => c.model.outputs.toJSON())
              .filter(o => o.output_type === 'error')
              .map(o => `${{o.ename}}: ${{o.evalue}}`)""",
        arg=notebook,
    )
    assert not failures, f"{notebook} raised: {failures}"


def _wait_until(read: Callable[[], Any], ok: Callable[[Any], bool], what: str) -> Any:
    """The first value ``ok`` accepts: each widget's DOM is updated on its own, so the page passes through mixes."""
    deadline = time.monotonic() + CHANGE_TIMEOUT_S
    value = read()
    while not ok(value) and time.monotonic() < deadline:
        time.sleep(0.25)
        value = read()
    assert ok(value), f"{what} not reached within {CHANGE_TIMEOUT_S:.0f} s (last seen {str(value)[:300]})"
    return value


def _wait_for_change(read: Callable[[], Any], before: Any, what: str) -> Any:
    """The first value other than ``before`` (for what changes as a whole: one widget's text, one table's order)."""
    return _wait_until(read, lambda value: value != before, f"a change of {what}")


def _viewport_screenshot(page: Any, element: Any, path: Path) -> None:
    """JupyterLab as the user sees it, scrolled so that ``element`` starts at the top of the notebook."""
    element.evaluate("el => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    page.screenshot(path=str(path))


DOC_IMAGES = REPO_ROOT / "docs" / "images"


def _doc_image(shot: Path, name: str) -> None:
    """Keep a screenshot the README shows, when asked to (``EVT_UPDATE_DOC_IMAGES=1``)."""
    if os.environ.get("EVT_UPDATE_DOC_IMAGES") == "1":
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, DOC_IMAGES / name)


def _selected_logs(text: str) -> int:
    m = re.search(r"selected logs:\s*([\d,]+)", text)
    assert m, f"no 'selected logs: N' in the totals: {text[:500]!r}"
    return int(m.group(1).replace(",", ""))


def test_threshold_slider_updates_totals_and_chart(page: Any, lab_server: LabServer, screenshots: Path) -> None:
    _open_and_run_all(page, lab_server, "03_threshold_what_if.ipynb")
    preview = page.locator(".evt-preview").first
    preview.wait_for(state="visible")
    totals = preview.locator(".evt-preview-totals")
    chart = preview.locator(".evt-preview-chart")
    page.wait_for_function(
        "el => /selected logs:/.test(el.innerText)", arg=totals.element_handle(), timeout=CHANGE_TIMEOUT_S * 1000
    )
    chart.wait_for(state="visible")
    page.wait_for_function(
        "el => el.querySelectorAll('.bars path, .point path').length > 0",
        arg=chart.element_handle(),
        timeout=CHANGE_TIMEOUT_S * 1000,
    )
    preview.scroll_into_view_if_needed()

    def read_totals() -> str:
        return str(totals.inner_text())

    def read_chart() -> dict[str, Any]:
        signature: dict[str, Any] = chart.evaluate(_CHART_SIGNATURE_JS)
        return signature

    totals_before, chart_before = read_totals(), read_chart()
    logs_before = _selected_logs(totals_before)
    assert chart_before["barCount"] > 0, "the preview chart drew no bars"
    preview.screenshot(path=str(screenshots / "03_threshold_preview_before.png"))

    handle = preview.locator(".evt-threshold-slider .noUi-handle").first
    handle.focus()
    handle.press("Home")  # T to the earliest min event time: the fewest logs selected
    totals_after = _wait_for_change(read_totals, totals_before, "the totals after moving the slider to its minimum")
    logs_min = _selected_logs(totals_after)
    assert logs_min < logs_before, (logs_min, logs_before)
    # Plotly's trace data and its SVG bars change one after the other: wait for both.
    chart_after = _wait_until(
        read_chart,
        lambda c: c["data"] != chart_before["data"] and c["bars"] != chart_before["bars"],
        "the chart's plotly trace data and SVG bars after moving the slider",
    )

    handle.press("End")  # T to the latest min event time: every log with data selected
    totals_max = _wait_for_change(read_totals, totals_after, "the totals after moving the slider to its maximum")
    logs_max = _selected_logs(totals_max)
    assert logs_max > logs_before, (logs_max, logs_before)
    _wait_for_change(read_chart, chart_after, "the chart after moving the slider to its maximum")

    # A click on the slider's track moves the handle there (mouse, as a user would): T near the middle of the week.
    track = preview.locator(".evt-threshold-slider .noUi-target").first
    box = track.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] * 0.45, box["y"] + box["height"] / 2)
    totals_mid = _wait_for_change(read_totals, totals_max, "the totals after clicking the slider track")
    assert logs_min < _selected_logs(totals_mid) < logs_max, totals_mid
    page.wait_for_timeout(500)
    preview.screenshot(path=str(screenshots / "03_threshold_preview_after.png"))
    _viewport_screenshot(page, preview, screenshots / "03_threshold_preview_lab.png")
    _doc_image(screenshots / "03_threshold_preview_lab.png", "threshold_preview.png")


def _row_keys(table: Any) -> list[str]:
    keys: list[str] = table.evaluate(
        "el => Array.from(el.querySelectorAll('tr.evt-block-row')).map(r => r.getAttribute('data-key'))"
    )
    return keys


def _select(page: Any, container: Any, label: str) -> None:
    """Choose an option of the ipywidgets dropdown inside ``container`` by its label, as a user would."""
    container.locator("select").first.select_option(label=label)


def test_inspector_table_sorts_and_opens_a_header(page: Any, lab_server: LabServer, screenshots: Path) -> None:
    _open_and_run_all(page, lab_server, "01_inspect_log_headers.ipynb")
    inspector = page.locator(".evt-inspector").first
    inspector.wait_for(state="visible")
    blocks = inspector.locator(".evt-inspector-blocks").first
    page.wait_for_function(
        "el => el.querySelectorAll('tr.evt-block-row').length > 100", arg=blocks.element_handle(), timeout=60_000
    )
    before = _row_keys(blocks)
    assert len(before) == 600, len(before)  # the whole demo table: 600 blocks, one row each

    inspector.locator(".evt-inspector-sort").scroll_into_view_if_needed()
    _select(page, inspector.locator(".evt-inspector-sort"), "min event time")
    inspector.locator(".evt-inspector-descending").click()
    # The choice of column and the click on "descending" each redraw the table: wait for the second redraw (its
    # header marks the column descending) before reading the rows, or the ascending order may be read.
    _wait_until(
        lambda: blocks.locator("th").all_inner_texts(),
        lambda head: any(h.startswith("min event time") and h.endswith("▼") for h in head),
        "the block table's header to mark min event time descending",
    )
    after = _row_keys(blocks)
    assert sorted(after) == sorted(before) and after[0] != before[0]
    first_row = blocks.locator("tr.evt-block-row").first.inner_text()
    assert "2013-01-08" in first_row, first_row  # the latest minimum of the week comes first

    # The header of the block at the top: open it from the selector, then unfold its schema.
    _select(
        page,
        inspector.locator(".evt-inspector-block"),
        inspector.locator(".evt-inspector-block option").first.inner_text(),
    )
    header = inspector.locator(".evt-block-header-full").first
    header.wait_for(state="visible", timeout=CHANGE_TIMEOUT_S * 1000)
    text = header.inner_text()
    assert "INSTANT_TIME" in text and re.search(r"\b\d{17}\b", text), text[:1000]
    schema = header.locator("details.evt-schema").first
    assert "22 fields" in schema.locator("summary").inner_text()
    assert not schema.locator("pre").is_visible(), "the schema is folded until asked for"
    schema.locator("summary").click()
    schema.locator("pre").wait_for(state="visible")
    assert "sched_dep_ts" in schema.locator("pre").inner_text()
    shot = screenshots / "01_log_header_inspector_lab.png"
    _viewport_screenshot(page, inspector.locator(".evt-inspector-sort"), shot)
    _doc_image(shot, "log_header_inspector.png")


_TRACES_JS = """
root => {
  const gd = root.classList.contains('js-plotly-plot') ? root : root.querySelector('.js-plotly-plot');
  if (!gd || !gd.data) return null;
  return {
    traces: gd.data.map(t => ({name: t.name, mode: t.mode, n: t.x ? t.x.length : 0})),
    shapes: (gd.layout.shapes || []).length,
    xaxis: gd.layout.xaxis && gd.layout.xaxis.title ? gd.layout.xaxis.title.text : null,
    points: root.querySelectorAll('.scatterlayer .point').length,
  };
}
"""


def test_distribution_plot_shows_replay_order_and_t(
    page: Any, lab_server: LabServer, screenshots: Path, prebuilt_demo_table: str
) -> None:
    import evt_toolkit as evt
    from evt_toolkit.widgets.models import DistributionModel

    want = DistributionModel(evt.HudiTable.open(prebuilt_demo_table)).counts()
    _open_and_run_all(page, lab_server, "02_event_time_distribution.ipynb")
    chart = page.locator(".evt-distribution-chart").first
    chart.wait_for(state="visible")
    page.wait_for_function(
        "el => el.querySelectorAll('.scatterlayer .point').length > 100",
        arg=chart.element_handle(),
        timeout=CHANGE_TIMEOUT_S * 1000,
    )
    info = chart.evaluate(_TRACES_JS)
    assert info is not None
    by_name = {t["name"]: t["n"] for t in info["traces"] if t["mode"] == "markers"}
    logs = by_name["min ≤ T: compacted"] + by_name["min > T, forced in by the prefix rule"]
    logs += by_name["min > T: kept (linked)"]
    assert logs == want["known"] > 500, by_name  # every log with a known min event time, each drawn once
    assert by_name["out of order (older than a log before it)"] == want["out_of_order"]
    assert by_name["out of order (older than a log before it)"] > 0
    assert info["shapes"] == 1 and info["xaxis"].startswith("log file #"), info
    assert info["points"] >= logs  # drawn in the browser, not only in the figure's data
    info_text = page.locator(".evt-distribution-info").first.inner_text()
    assert "out-of-order logs" in info_text
    forced = by_name["min > T, forced in by the prefix rule"]
    assert f"{by_name['min ≤ T: compacted']:,} log(s) with min ≤ T, {forced:,} more forced" in info_text, info_text
    shot = screenshots / "02_event_time_distribution_lab.png"
    _viewport_screenshot(page, page.locator(".evt-distribution").first, shot)
    _doc_image(shot, "event_time_distribution.png")


_RUNNER_NOTEBOOK = [
    "import shutil, tempfile\n"
    "from pathlib import Path\n"
    "from evt_toolkit import HudiTable\n"
    "from evt_toolkit.compaction import EventTimeBasedCompactionStrategy\n"
    "from evt_toolkit.demo.locate import ensure_demo_table\n"
    "from evt_toolkit.widgets import CompactionRunner\n"
    "work = Path(tempfile.mkdtemp(prefix='evt-browser-runner-')) / 'flights'\n"
    "shutil.copytree(ensure_demo_table().storage.base_path, work, symlinks=True)\n"
    "runner = CompactionRunner(HudiTable.open(str(work)), EventTimeBasedCompactionStrategy(threshold='2013-01-05'))\n"
    "runner",
]


def _button(runner: Any, css: str) -> dict[str, Any]:
    state: dict[str, Any] = runner.locator(f"button.{css}").first.evaluate(
        "b => ({disabled: b.disabled, primary: b.classList.contains('mod-primary')})"
    )
    return state


def test_runner_buttons_follow_the_state(page: Any, lab_server: LabServer, screenshots: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in _RUNNER_NOTEBOOK]
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nbformat.write(nb, lab_server.root_dir / "runner_buttons.ipynb")
    _open_and_run_all(page, lab_server, "runner_buttons.ipynb")
    runner = page.locator(".evt-runner").first
    runner.wait_for(state="visible")

    def states() -> dict[str, dict[str, bool]]:
        return {c: _button(runner, f"evt-runner-{c}") for c in ("schedule", "run", "validate", "unschedule")}

    def is_new(s: dict[str, dict[str, bool]]) -> bool:
        return s["schedule"] == {"disabled": False, "primary": True} and all(
            s[c]["disabled"] for c in ("run", "validate", "unschedule")
        )

    def is_scheduled(s: dict[str, dict[str, bool]]) -> bool:
        return (
            s["schedule"]["disabled"]
            and s["run"] == {"disabled": False, "primary": True}
            and not s["unschedule"]["disabled"]
            and not s["validate"]["disabled"]
        )

    _wait_until(states, is_new, "the runner's buttons before anything is scheduled")
    runner.scroll_into_view_if_needed()
    runner.locator("button.evt-runner-schedule").click()
    _wait_until(states, is_scheduled, "the runner's buttons after Schedule (Run primary, Schedule disabled)")
    assert "state: scheduled" in runner.locator(".evt-runner-status").inner_text()
    shot = screenshots / "runner_scheduled_lab.png"
    _viewport_screenshot(page, runner, shot)
    _doc_image(shot, "compaction_runner.png")

    runner.locator("button.evt-runner-run").click()
    page.wait_for_function(
        "el => /state: done/.test(el.innerText)",
        arg=runner.locator(".evt-runner-status").element_handle(),
        timeout=RUN_TIMEOUT_MS,
    )
    _wait_until(
        states,
        lambda s: s["run"]["disabled"] and s["unschedule"]["disabled"] and not s["schedule"]["disabled"],
        "the runner's buttons after the run (Schedule enabled, Run and Unschedule disabled)",
    )
    freshness = runner.locator(".evt-runner-freshness").inner_text()
    assert "every event ≤ 2013-01-05" in freshness, freshness
