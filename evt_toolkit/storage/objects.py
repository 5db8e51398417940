"""Object stores (S3 and S3-compatible, GCS, Azure) through obstore, the Python binding of Rust's ``object_store``.

One :class:`ObjectBackend` per table: a store rooted at the table's key prefix, every call counted as the request
it makes (see :mod:`evt_toolkit.storage.requests`), errors turned into :class:`~evt_toolkit.errors.StorageError`
subclasses that name the full URI and never a credential.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import obstore as obs
from obstore import exceptions as obx

from evt_toolkit.errors import ObjectExistsError, ObjectNotFoundError, StorageError
from evt_toolkit.storage.options import StorageOptions
from evt_toolkit.storage.requests import RequestCounter, record

#: URI schemes and the obstore family that serves them.
SCHEMES = {"s3": "s3", "s3a": "s3", "gs": "gs", "gcs": "gs", "az": "az", "abfs": "az", "abfss": "az", "azure": "az"}
#: S3 returns at most this many keys per LIST page.
LIST_PAGE = 1000


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class ObjectBackend:
    """The requests a table makes on an object store.

    Args:
        uri: normalized table URI, e.g. ``s3a://bucket/warehouse/trips``.
        scheme: the URI scheme as given (``s3``, ``s3a``, ``gs``, ``abfs``, ...).
        bucket: bucket (container) name.
        prefix: the table's key prefix inside the bucket.
        options: storage options (credentials, endpoint, client settings).
        counter: where requests are counted.
    """

    def __init__(
        self, uri: str, scheme: str, bucket: str, prefix: str, options: StorageOptions, counter: RequestCounter
    ) -> None:
        self.uri = uri.rstrip("/")
        self.scheme = scheme
        self.bucket = bucket
        self.prefix = prefix
        self.options = options
        self.counter = counter
        family = SCHEMES[scheme]
        self.family = family
        config, client = options.store_config(family)
        cfg: Any = config or None
        cli: Any = client or None
        self._conditional_put = True
        try:
            if family == "s3":
                from obstore.store import S3Store

                self.store: Any = S3Store(bucket, prefix=prefix or None, config=cfg, client_options=cli)
            elif family == "gs":
                from obstore.store import GCSStore

                self.store = GCSStore(bucket, prefix=prefix or None, config=cfg, client_options=cli)
            else:
                from obstore.store import AzureStore

                container, _, account_host = bucket.partition("@")
                if account_host and "account_name" not in config:
                    cfg = {**config, "account_name": account_host.split(".", 1)[0]}
                self.store = AzureStore(container, prefix=prefix or None, config=cfg, client_options=cli)
        except (obx.BaseError, ValueError, TypeError) as exc:
            raise StorageError(f"cannot configure the object store for {self.uri}: {self._clean(exc)}") from None

    # -- errors -------------------------------------------------------------------------------------------------
    def full(self, rel: str) -> str:
        return f"{self.uri}/{rel}" if rel else self.uri

    def _clean(self, exc: BaseException) -> str:
        return self.options.scrub(_first_line(exc))

    def _error(self, exc: BaseException, what: str, rel: str) -> StorageError:
        full = self.full(rel)
        text = str(exc)
        if "NoSuchBucket" in text:
            return ObjectNotFoundError(f"{full}: bucket {self.bucket!r} does not exist ({self.scheme}://{self.bucket})")
        if isinstance(exc, FileNotFoundError | obx.NotFoundError):
            return ObjectNotFoundError(f"file not found: {full}")
        if isinstance(exc, obx.AlreadyExistsError | obx.PreconditionError):
            return ObjectExistsError(f"{full} already exists: not overwriting it")
        if isinstance(exc, obx.PermissionDeniedError | obx.UnauthenticatedError):
            return StorageError(f"cannot {what} {full}: access denied ({self._clean(exc)})")
        return StorageError(f"cannot {what} {full}: {self._clean(exc)}")

    # -- reads --------------------------------------------------------------------------------------------------
    def head(self, rel: str) -> int | None:
        """Size of the object, ``None`` when there is none."""
        record(self.counter, "head")
        try:
            meta = obs.head(self.store, rel)
        except (FileNotFoundError, obx.NotFoundError):
            return None
        except (OSError, obx.BaseError) as exc:
            raise self._error(exc, "stat", rel) from None
        return int(meta["size"])

    def mtime(self, rel: str) -> Any:
        record(self.counter, "head")
        try:
            return obs.head(self.store, rel)["last_modified"]
        except (OSError, obx.BaseError) as exc:
            raise self._error(exc, "stat", rel) from None

    def get(self, rel: str) -> bytes:
        """The whole object (one GET)."""
        try:
            data = bytes(obs.get(self.store, rel).bytes())
        except (OSError, obx.BaseError) as exc:
            record(self.counter, "get")
            raise self._error(exc, "read", rel) from None
        record(self.counter, "get", read=len(data))
        return data

    def get_prefix(self, rel: str, length: int) -> tuple[bytes, int]:
        """The first ``length`` bytes (all of a smaller object) and the object's size: one ranged GET."""
        try:
            res = obs.get(self.store, rel, options={"range": (0, length)})
            size = int(res.meta["size"])
            data = bytes(res.bytes())
        except (OSError, obx.BaseError) as exc:
            record(self.counter, "get_range")
            raise self._error(exc, "read", rel) from None
        record(self.counter, "get_range", read=len(data))
        return data, size

    def get_ranges(self, rel: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """Bytes of each ``(start, end)`` range (end exclusive), one ranged GET per range (the caller coalesces)."""
        if not ranges:
            return []
        try:
            parts = obs.get_ranges(
                self.store, rel, starts=[a for a, _ in ranges], ends=[b for _, b in ranges], coalesce=0
            )
        except (OSError, obx.BaseError) as exc:
            record(self.counter, "get_range", len(ranges))
            raise self._error(exc, "read", rel) from None
        out = [bytes(p) for p in parts]
        record(self.counter, "get_range", len(ranges), read=sum(len(p) for p in out))
        return out

    def list_folder(self, rel: str) -> tuple[list[tuple[str, int]], list[str]]:
        """``([(name, size)], [sub-folder names])`` of one folder; folder-marker objects (``key/``) are skipped."""
        try:
            res = obs.list_with_delimiter(self.store, rel or None)
        except (OSError, obx.BaseError) as exc:
            record(self.counter, "list")
            raise self._error(exc, "list", rel) from None
        objects = res["objects"]
        dirs = res["common_prefixes"]
        record(self.counter, "list", max(1, -(-(len(objects) + len(dirs)) // LIST_PAGE)))
        base = f"{rel}/" if rel else ""
        files: list[tuple[str, int]] = []
        for meta in objects:
            path = meta["path"]
            name = path[len(base) :] if path.startswith(base) else path.rsplit("/", 1)[-1]
            if not name or name.endswith("/"):
                continue
            files.append((name, int(meta["size"])))
        names = [d[len(base) :].rstrip("/") if d.startswith(base) else d.rstrip("/").rsplit("/", 1)[-1] for d in dirs]
        return files, [n for n in names if n]

    def list_recursive(self, rel: str) -> list[tuple[str, int]]:
        """Every object under ``rel`` (paths relative to the table), paging through LIST."""
        out: list[tuple[str, int]] = []
        pages = 0
        try:
            for chunk in obs.list(self.store, rel or None, chunk_size=LIST_PAGE):
                pages += 1
                out.extend((m["path"], int(m["size"])) for m in chunk)
        except (OSError, obx.BaseError) as exc:
            raise self._error(exc, "list", rel) from None
        finally:
            record(self.counter, "list", max(1, pages))
        return [(p, s) for p, s in out if not p.endswith("/")]

    def has_prefix(self, rel: str) -> bool:
        """Whether any object lies under ``rel/`` (a "folder" exists): one LIST of at most one key."""
        record(self.counter, "list")
        try:
            for chunk in obs.list(self.store, rel or None, chunk_size=1):
                return bool(chunk)
        except (OSError, obx.BaseError) as exc:
            raise self._error(exc, "list", rel) from None
        return False

    # -- writes -------------------------------------------------------------------------------------------------
    def put(self, rel: str, data: bytes, *, create_only: bool, staging: str | None = None) -> None:
        """One PUT; ``create_only`` sends ``If-None-Match: *`` (S3/GCS/Azure put-if-absent). No temporary object, so
        ``staging`` is not used."""
        record(self.counter, "put", written=len(data))
        try:
            if create_only and self._conditional_put:
                try:
                    obs.put(self.store, rel, data, mode="create", use_multipart=False)
                    return
                except obx.NotSupportedError:
                    # A store without conditional writes: check, then write (racy; documented).
                    self._conditional_put = False
            if create_only and self.head(rel) is not None:
                raise ObjectExistsError(f"{self.full(rel)} already exists: not overwriting it")
            obs.put(self.store, rel, data, mode="overwrite", use_multipart=False)
        except (OSError, obx.BaseError) as exc:
            raise self._error(exc, "write", rel) from None

    def copy(self, src: str, dst: str, *, overwrite: bool) -> None:
        """Server-side copy (S3 CopyObject); without ``overwrite`` an existing ``dst`` raises ObjectExistsError."""
        try:
            if not overwrite:
                try:
                    obs.copy(self.store, src, dst, overwrite=False)
                    record(self.counter, "copy")
                    return
                except obx.NotSupportedError:
                    # S3 has no copy-if-not-exists unless configured (aws_copy_if_not_exists); nothing was sent.
                    pass
                except (OSError, obx.BaseError):
                    record(self.counter, "copy")
                    raise
                if self.head(dst) is not None:
                    raise ObjectExistsError(f"{self.full(dst)} already exists: not overwriting it")
            record(self.counter, "copy")
            obs.copy(self.store, src, dst, overwrite=True)
        except (OSError, obx.BaseError) as exc:
            raise self._error(exc, "copy to", dst) from None

    def delete(self, rels: Sequence[str]) -> None:
        """Delete objects (bulk requests of up to 1000 keys on S3; a missing key is not an error)."""
        if not rels:
            return
        n = -(-len(rels) // 1000) if self.family == "s3" and len(rels) > 1 else len(rels)
        record(self.counter, "delete", n)
        try:
            obs.delete(self.store, list(rels) if len(rels) > 1 else rels[0])
        except (FileNotFoundError, obx.NotFoundError):
            return
        except (OSError, obx.BaseError) as exc:
            raise self._error(exc, "delete", rels[0]) from None
