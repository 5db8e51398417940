"""Requests that fail on the wire: a fault-injecting proxy in front of the session's S3 server, the same process
going on with the same ``HudiTable``.

The proxy (:class:`FaultProxy`, plain ``http.server`` on 127.0.0.1) forwards every request to the session's moto
server. Armed at ``n``, it lets the ``n``-th request that changes the store (PUT, POST, DELETE) through and then
resets the connection without an answer — the store applied it, the client never heard: the client's retry of a
create-only PUT finds the object there (412), a retried delete finds nothing. Or it answers the ``n``-th change
with a 500 without forwarding it (the client retries). Either way the operation may fail after it changed the
table, with its object's caches (listed sizes, fetched bytes, timeline) in whatever state the failure left them.

After each failure: a new process (another ``HudiTable`` straight on the server) and hudi-rs read the state before
or after the operation; the object that ran it reads what the new process reads; the documented recovery ends at
the operation's result.

``EVT_SAFETY2_S3_STEP`` (default 4) takes every n-th change (1 takes them all), up to ``EVT_SAFETY2_S3_MAX``
(default 12); ``EVT_SAFETY2_S3_ALL=1`` adds the 500s; ``EVT_SAFETY2_S3_TRACE=1`` prints what each failure raised.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.errors import EvtError
from tests.safety.test_inprocess_faults import _one_of, recover, sweep_operation
from tests.safety.test_model import _same
from tests.tables import create

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

STEP = int(os.environ.get("EVT_SAFETY2_S3_STEP", "4"))
#: A 500 is retried by the client (the store never saw the request): the long run adds it.
MODES = ["reset", "500"] if os.environ.get("EVT_SAFETY2_S3_ALL") else ["reset"]
MAX_CHANGES = int(os.environ.get("EVT_SAFETY2_S3_MAX", "12"))
_CHANGES = ("PUT", "POST", "DELETE")
_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "trailer", "upgrade"}


class FaultProxy:
    """A loopback HTTP proxy in front of an S3 server that fails the n-th change once it is armed."""

    def __init__(self, upstream: str) -> None:
        u = urlsplit(upstream)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 80
        self.lock = threading.Lock()
        self.armed_at = 0
        self.mode = "reset"
        self.changes = 0
        self.fired = False
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fail = False
                if self.command in _CHANGES:
                    with proxy.lock:
                        proxy.changes += 1
                        fail = proxy.armed_at > 0 and proxy.changes == proxy.armed_at
                        proxy.fired = proxy.fired or fail
                if fail and proxy.mode == "500":
                    payload = b"<Error><Code>InternalError</Code><Message>injected</Message></Error>"
                    self.send_response(500)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                conn = http.client.HTTPConnection(proxy.host, proxy.port, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                if fail:  # applied upstream; the client never hears back
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                    return
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in _HOP and k.lower() != "content-length":
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        class Server(ThreadingHTTPServer):
            # The client opens up to 32 connections at once: the default backlog of 5 drops some under load.
            request_queue_size = 256

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @contextlib.contextmanager
    def armed(self, n: int, mode: str) -> Any:
        with self.lock:
            self.armed_at, self.mode, self.changes, self.fired = n, mode, 0, False
        try:
            yield self
        finally:
            with self.lock:
                self.armed_at = 0

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def proxy(s3_server: Any) -> Any:
    p = FaultProxy(s3_server.endpoint)
    yield p
    p.close()


def _rs(uri: str, options: dict[str, str]) -> pa.Table:
    batches = hudi.HudiTableBuilder.from_base_uri(uri).with_storage_options(options).build().read()
    return pa.Table.from_batches(batches) if batches else pa.table({})


def _table(uri: str, options: dict[str, str], op: str) -> tuple[evt.HudiTable, Any]:
    t = create(uri, "event_time", table_version=9, storage_options=options)
    return t, sweep_operation(t, op)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["write", "rollback-last", "run", "clean"])
def test_a_request_failing_on_the_wire_then_the_same_object_goes_on(
    s3_server: Any, proxy: FaultProxy, op: str, mode: str
) -> None:
    direct = s3_server.options
    via = {**direct, "aws_endpoint_url": proxy.endpoint}
    bucket = s3_server.new_bucket("s3faults")
    ref, ref_op = _table(f"s3://{bucket}/reference", direct, op)
    states = [ref.read()]
    ref_op()
    states.append(ref.refresh().read())
    for n in range(1, MAX_CHANGES + 1, STEP):
        uri = f"s3://{bucket}/t{n}"
        t, op_fn = _table(uri, via, op)
        error: EvtError | None = None
        with proxy.armed(n, mode) as armed:
            try:
                op_fn()
            except EvtError as exc:
                error = exc
        fired = armed.fired
        if os.environ.get("EVT_SAFETY2_S3_TRACE"):
            print(f"{op} {mode} n={n} fired={fired} error={type(error).__name__}: {str(error)[:150]}")
        what = f"{op}, change {n} failing ({mode})"
        fresh = evt.HudiTable.open(uri, storage_options=direct)
        _one_of(fresh.read(), states, f"{what}: a new process")
        _one_of(_rs(uri, direct), states, f"{what}: hudi-rs")
        _same(t.read(), fresh.read(), f"{what}: the same object")
        _same(t.read("read_optimized"), fresh.read("read_optimized"), f"{what}: the same object, RO")
        recover(t, op)
        _same(evt.HudiTable.open(uri, storage_options=direct).read(), states[1], f"{what}, then recovered")
        if not fired:
            break
