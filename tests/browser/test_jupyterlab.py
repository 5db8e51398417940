"""JupyterLab in a real browser: run the notebooks and use the widgets as a data engineer would.

* notebook 03: run all cells, move the threshold slider with the keyboard (Home / End on the slider handle) and
  check that the totals (``selected logs: N``) and the plotly chart (trace data and the SVG bars) change;
* notebook 01: run all cells, press a block's header toggle and check that the full header (``INSTANT_TIME``) shows.

Screenshots go to ``test-artifacts/screenshots/`` (README images are copied from there by hand).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import LabServer

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


def _wait_for_change(read: Callable[[], Any], before: Any, what: str) -> Any:
    deadline = time.monotonic() + CHANGE_TIMEOUT_S
    value = read()
    while value == before and time.monotonic() < deadline:
        time.sleep(0.25)
        value = read()
    assert value != before, f"{what} did not change within {CHANGE_TIMEOUT_S:.0f} s (still {str(before)[:300]})"
    return value


def _viewport_screenshot(page: Any, element: Any, path: Path) -> None:
    """JupyterLab as the user sees it, scrolled so that ``element`` starts at the top of the notebook."""
    element.evaluate("el => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    page.screenshot(path=str(path))


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
    chart_after = _wait_for_change(read_chart, chart_before, "the chart after moving the slider")
    assert chart_after["data"] != chart_before["data"], "plotly trace data unchanged"
    assert chart_after["bars"] != chart_before["bars"], "SVG bars unchanged"

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


def test_log_header_toggle_shows_full_header(page: Any, lab_server: LabServer, screenshots: Path) -> None:
    _open_and_run_all(page, lab_server, "01_inspect_log_headers.ipynb")
    inspector = page.locator(".evt-inspector").first
    inspector.wait_for(state="visible")
    toggle = inspector.locator(".evt-block-header-toggle").first
    toggle.wait_for(state="visible")
    assert inspector.locator(".evt-block-header-full").count() == 0, "a full header shows before any toggle"
    toggle.scroll_into_view_if_needed()
    toggle.click()
    full = inspector.locator(".evt-block-header-full").first
    full.wait_for(state="visible", timeout=CHANGE_TIMEOUT_S * 1000)
    text = full.inner_text()
    assert "INSTANT_TIME" in text, text[:1000]
    assert re.search(r"\b\d{17}\b", text), f"no instant time in the header: {text[:1000]}"
    assert "SCHEMA" in text and "sched_dep_ts" in text, text[:1000]
    _viewport_screenshot(page, inspector, screenshots / "01_log_header_inspector_lab.png")
