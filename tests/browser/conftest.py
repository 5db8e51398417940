"""Fixtures of the browser test: a prebuilt demo table, a JupyterLab server on loopback, and Debian's Chromium
driven by Playwright.

The server runs on a random free port of 127.0.0.1 with a random token, over a temporary copy of ``notebooks/``
(outputs cleared) and with ``EVT_DEMO_TABLE`` pointing at the prebuilt demo table; its settings, workspaces and
runtime files live in the same temporary folder, so the test never touches the user's JupyterLab state. The browser
is ``/usr/bin/chromium`` (``EVT_CHROMIUM`` overrides), launched through Playwright's ``executable_path``: Playwright's
own browser downloads are never used. Without Chromium or the ``playwright`` package the tests skip with the reason
(``bash scripts/install_browser.sh`` installs Chromium on Debian).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
ARTIFACTS_DIR = REPO_ROOT / "test-artifacts"
SCREENSHOTS_DIR = ARTIFACTS_DIR / "screenshots"
CHROMIUM = Path(os.environ.get("EVT_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_TIMEOUT_S = 90

# JupyterLab settings for a quiet, deterministic UI: no news or update toasts that could cover the widgets.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: drives JupyterLab in a real browser (Playwright + Debian Chromium)")


@dataclass(frozen=True)
class LabServer:
    """A running JupyterLab server."""

    base_url: str
    token: str
    root_dir: Path

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}{path}{sep}token={self.token}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _copy_notebooks(target: Path) -> None:
    import nbformat

    target.mkdir(parents=True, exist_ok=True)
    for src in sorted(NOTEBOOKS_DIR.glob("*.ipynb")):
        nb = nbformat.read(src, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
        nb.metadata.pop("widgets", None)
        nbformat.write(nb, target / src.name)


def _wait_ready(server: LabServer, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(server.url("/api/status"), timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"JupyterLab did not answer within {SERVER_START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def chromium_path() -> Path:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not found: run 'bash scripts/install_browser.sh' (Debian chromium, needs root)")
    pytest.importorskip("playwright", reason="the playwright package is not installed (extra 'test')")
    return CHROMIUM


@pytest.fixture(scope="session")
def prebuilt_demo_table() -> str:
    """The demo table, built once (``EVT_DEMO_TABLE`` or ``demo_tables/flights``) and reused afterwards."""
    from evt_toolkit.demo.build import build_demo_table
    from evt_toolkit.demo.locate import demo_table_path

    summary = build_demo_table(demo_table_path(), progress=False)
    return summary.path.removeprefix("file://")


@pytest.fixture(scope="session")
def lab_server(
    chromium_path: Path, prebuilt_demo_table: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LabServer]:
    pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (extra 'notebook')")
    work = tmp_path_factory.mktemp("jupyterlab")
    root = work / "notebooks"
    _copy_notebooks(root)
    settings = work / "settings"
    for rel, value in LAB_SETTINGS.items():
        (settings / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings / rel).write_text(json.dumps(value))
    token = secrets.token_hex(24)
    port = _free_port()
    env = {
        **os.environ,
        "EVT_DEMO_TABLE": prebuilt_demo_table,
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(work / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
    }
    env.pop("EVT_TABLE_PATH", None)
    log = work / "jupyterlab.log"
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.open_browser=False",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # containers and CI runners often run as root
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = LabServer(f"http://127.0.0.1:{port}", token, root)
    try:
        _wait_ready(server, proc, log)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
        shutil.copy(log, ARTIFACTS_DIR / "jupyterlab.log")


@pytest.fixture(scope="session")
def browser(chromium_path: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(chromium_path), headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call":
        item.stash[_FAILED] = report.failed


_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh browser page; on failure its screenshot and HTML are kept in ``test-artifacts/``."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
    p = context.new_page()
    p.set_default_timeout(60_000)
    try:
        yield p
    finally:
        if request.node.stash.get(_FAILED, False):
            ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
            name = request.node.name
            try:
                p.screenshot(path=str(ARTIFACTS_DIR / f"{name}.failure.png"), full_page=True)
                (ARTIFACTS_DIR / f"{name}.failure.html").write_text(p.content())
            except Exception as exc:  # the page may be gone; the test's own error matters more
                print(f"could not save the failure artifacts of {name}: {exc}")
        context.close()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS_DIR.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS_DIR
