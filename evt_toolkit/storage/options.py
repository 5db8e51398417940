"""Storage options: the ``storage_options`` dict of pyiceberg, deltalake and hudi-rs, typed and redacted.

Keys follow the Rust ``object_store`` crate, which hudi-rs and delta-rs pass them to unchanged
(``AmazonS3ConfigKey``, ``GoogleConfigKey``, ``AzureConfigKey``, ``ClientConfigKey``): ``aws_endpoint_url``,
``aws_access_key_id``, ``aws_secret_access_key``, ``aws_session_token``, ``aws_region``, ``aws_allow_http``,
``google_service_account``, ``azure_storage_account_name``, ... Spark's Hadoop S3A settings
(``fs.s3a.endpoint``, ``fs.s3a.access.key``, ...; with or without the ``spark.hadoop.`` prefix) are translated by
:func:`options_from_hadoop_conf`. Two toolkit keys tune the I/O layer itself: ``evt_max_concurrency`` (parallel
requests per table, default 32) and ``evt_whole_object_limit`` (files up to this size are fetched with one GET,
default 8 MiB).

A :class:`StorageOptions` never shows a credential: its ``repr`` and :meth:`StorageOptions.redacted` print ``***``
for every secret, and :meth:`StorageOptions.scrub` removes secret values from any text (error messages of the
object-store client).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from evt_toolkit.errors import StorageError

#: Key fragments that mark a value as a credential (never printed).
_SECRET_FRAGMENTS = ("secret", "token", "password", "access_key", "account_key", "sas", "credential", "private")

#: Options understood by the client (``ClientConfigKey``), for every cloud; the object-store builders take them
#: apart from the store's own keys.
_CLIENT_KEYS = {
    "allow_http",
    "allow_invalid_certificates",
    "connect_timeout",
    "default_content_type",
    "http1_only",
    "http2_only",
    "pool_idle_timeout",
    "pool_max_idle_per_host",
    "proxy_url",
    "proxy_ca_certificate",
    "proxy_excludes",
    "randomize_addresses",
    "timeout",
    "user_agent",
}

#: Aliases of one ``object_store`` key, as ``AmazonS3ConfigKey::from_str`` accepts them, mapped to obstore's name.
_S3_ALIASES = {
    "endpoint_url": "endpoint",
    "endpoint": "endpoint",
    "access_key_id": "access_key_id",
    "secret_access_key": "secret_access_key",
    "session_token": "session_token",
    "token": "session_token",
    "region": "region",
    "default_region": "default_region",
    "bucket": "bucket",
    "bucket_name": "bucket",
    "virtual_hosted_style_request": "virtual_hosted_style_request",
    "unsigned_payload": "unsigned_payload",
    "skip_signature": "skip_signature",
    "checksum_algorithm": "checksum_algorithm",
    "conditional_put": "conditional_put",
    "copy_if_not_exists": "copy_if_not_exists",
    "s3_express": "s3_express",
    "request_payer": "request_payer",
    "server_side_encryption": "server_side_encryption",
    "sse_kms_key_id": "sse_kms_key_id",
    "sse_bucket_key_enabled": "sse_bucket_key_enabled",
    "imdsv1_fallback": "imdsv1_fallback",
    "metadata_endpoint": "metadata_endpoint",
    "container_credentials_relative_uri": "container_credentials_relative_uri",
    "role_arn": "role_arn",
    "role_session_name": "role_session_name",
    "web_identity_token_file": "web_identity_token_file",
    "sts_endpoint": "sts_endpoint",
    "disable_tagging": "disable_tagging",
}

#: The toolkit's own keys (not passed to the object store).
EVT_KEYS = {"evt_max_concurrency", "evt_whole_object_limit"}

DEFAULT_MAX_CONCURRENCY = 32
DEFAULT_WHOLE_OBJECT_LIMIT = 8 * 1024 * 1024


def is_secret_key(key: str) -> bool:
    """Whether the value of ``key`` is a credential (access keys, secrets, tokens, SAS, service-account keys)."""
    k = key.lower().replace(".", "_").replace("-", "_")
    return any(f in k for f in _SECRET_FRAGMENTS) or k.endswith(("_key", "service_account"))


def _as_bool(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True, slots=True)
class StorageOptions:
    """Storage options as given (``str -> str``), in key order; picklable, so it travels inside Spark tasks.

    Example:
        >>> StorageOptions.of({"aws_endpoint_url": "http://127.0.0.1:9000", "aws_secret_access_key": "s"})
        StorageOptions(aws_endpoint_url='http://127.0.0.1:9000', aws_secret_access_key='***')
    """

    items: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, options: Mapping[str, Any] | StorageOptions | None) -> StorageOptions:
        """Options from a mapping (values are turned into strings; ``None`` values dropped)."""
        if options is None:
            return cls()
        if isinstance(options, StorageOptions):
            return options
        if not isinstance(options, Mapping):
            raise StorageError(f"storage_options must be a dict of str to str, not {type(options).__name__}")
        pairs: dict[str, str] = {}
        for k, v in options.items():
            if v is None:
                continue
            key = str(k).strip()
            pairs[key.lower() if key.lower().startswith(("aws_", "google_", "azure_")) else key] = (
                ("true" if v else "false") if isinstance(v, bool) else str(v)
            )
        return cls(tuple(sorted(pairs.items())))

    def __bool__(self) -> bool:
        return bool(self.items)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.items)

    def as_dict(self) -> dict[str, str]:
        """The options with their real values (for handing to a client; never print this)."""
        return dict(self.items)

    def get(self, key: str, default: str | None = None) -> str | None:
        return dict(self.items).get(key, default)

    def merged(self, other: Mapping[str, Any] | StorageOptions | None) -> StorageOptions:
        """These options updated by ``other`` (``other`` wins)."""
        merged = self.as_dict()
        merged.update(StorageOptions.of(other).as_dict())
        return StorageOptions.of(merged)

    def redacted(self) -> dict[str, str]:
        """The options with every credential replaced by ``***`` (safe to print or log)."""
        return {k: ("***" if is_secret_key(k) else v) for k, v in self.items}

    def scrub(self, text: str) -> str:
        """``text`` with every credential value of these options replaced by ``***``."""
        for k, v in self.items:
            if v and len(v) >= 3 and is_secret_key(k):
                text = text.replace(v, "***")
        return text

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.redacted().items())
        return f"StorageOptions({inner})"

    __str__ = __repr__

    # -- the toolkit's own tuning ----------------------------------------------------------------------------
    @property
    def max_concurrency(self) -> int:
        return _positive_int(self.get("evt_max_concurrency"), DEFAULT_MAX_CONCURRENCY, "evt_max_concurrency")

    @property
    def whole_object_limit(self) -> int:
        return _positive_int(self.get("evt_whole_object_limit"), DEFAULT_WHOLE_OBJECT_LIMIT, "evt_whole_object_limit")

    # -- object-store client configuration -------------------------------------------------------------------
    def store_config(self, scheme: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(config, client_options)`` for an obstore store of ``scheme`` (``s3``, ``gs``, ``az``).

        Prefixed keys of the other clouds are ignored, so one dict may carry settings for several stores.

        Raises:
            StorageError: an option this store does not know (named; its value is never shown).
        """
        prefix = {"s3": "aws_", "gs": "google_", "az": "azure_"}[scheme]
        config: dict[str, Any] = {}
        client: dict[str, Any] = {}
        for key, value in self.items:
            k = key.lower()
            if k in EVT_KEYS:
                continue
            bare = k
            for p in ("aws_", "google_", "azure_"):
                if k.startswith(p):
                    bare = "" if p != prefix else k[len(p) :]
                    break
            if not bare:
                continue
            if bare in _CLIENT_KEYS:
                client[bare] = _as_bool(value) if bare in ("allow_http", "allow_invalid_certificates") else value
                continue
            if scheme == "s3":
                name = _S3_ALIASES.get(bare)
                if name is None:
                    raise StorageError(f"unknown S3 storage option {key!r}")
                config[name] = value
            else:
                config[bare] = value
        return config, client


def _positive_int(text: str | None, default: int, key: str) -> int:
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise StorageError(f"storage option {key}={text!r} is not an integer") from None
    if value < 1:
        raise StorageError(f"storage option {key}={text!r} must be at least 1")
    return value


# -- Spark / Hadoop S3A ------------------------------------------------------------------------------------------
_S3A_KEYS = {
    "endpoint": "aws_endpoint_url",
    "access.key": "aws_access_key_id",
    "secret.key": "aws_secret_access_key",
    "session.token": "aws_session_token",
    "endpoint.region": "aws_region",
    "region": "aws_region",
}


def options_from_hadoop_conf(conf: Mapping[str, str], bucket: str | None = None) -> dict[str, str]:
    """Storage options from Hadoop S3A settings (``fs.s3a.*``, with or without Spark's ``spark.hadoop.`` prefix).

    Per-bucket settings (``fs.s3a.bucket.<bucket>.endpoint``) win for ``bucket``, as in S3A. A scheme-less endpoint
    gets ``https://`` unless ``fs.s3a.connection.ssl.enabled=false``; ``fs.s3a.path.style.access=true`` turns off
    virtual-hosted-style requests.

    Example:
        >>> options_from_hadoop_conf({"spark.hadoop.fs.s3a.endpoint": "127.0.0.1:9000",
        ...                           "spark.hadoop.fs.s3a.connection.ssl.enabled": "false"})
        {'aws_endpoint_url': 'http://127.0.0.1:9000', 'aws_allow_http': 'true'}
    """
    flat: dict[str, str] = {}
    per_bucket: dict[str, str] = {}
    for key, value in conf.items():
        k = key[len("spark.hadoop.") :] if key.startswith("spark.hadoop.") else key
        if not k.startswith("fs.s3a."):
            continue
        rest = k[len("fs.s3a.") :]
        if rest.startswith("bucket."):
            if bucket is not None and rest.startswith(f"bucket.{bucket}."):
                per_bucket[rest[len(f"bucket.{bucket}.") :]] = value
            continue
        flat[rest] = value
    flat.update(per_bucket)
    out: dict[str, str] = {}
    for rest, value in flat.items():
        if rest in _S3A_KEYS:
            out[_S3A_KEYS[rest]] = value
    ssl = flat.get("connection.ssl.enabled")
    endpoint = out.get("aws_endpoint_url")
    if endpoint and "://" not in endpoint:
        out["aws_endpoint_url"] = ("http://" if ssl is not None and not _as_bool(ssl) else "https://") + endpoint
    if (ssl is not None and not _as_bool(ssl)) or (out.get("aws_endpoint_url") or "").startswith("http://"):
        out["aws_allow_http"] = "true"
    path_style = flat.get("path.style.access")
    if path_style is not None:
        out["aws_virtual_hosted_style_request"] = "false" if _as_bool(path_style) else "true"
    return out


def split_legacy_query(uri: str) -> tuple[str, dict[str, str]]:
    """``(uri without query, options)`` for pyarrow-style ``s3://b/t?endpoint_override=host:port&scheme=http``.

    Kept so URIs that worked with the earlier pyarrow-based layer keep working.
    """
    if "?" not in uri:
        return uri, {}
    base, query = uri.split("?", 1)
    out: dict[str, str] = {}
    params = dict(parse_qsl(query, keep_blank_values=True))
    scheme = params.pop("scheme", None)
    endpoint = params.pop("endpoint_override", None)
    if endpoint:
        if "://" not in endpoint:
            endpoint = f"{scheme or 'https'}://{endpoint}"
        out["aws_endpoint_url"] = endpoint
    if scheme == "http" or (endpoint and endpoint.startswith("http://")):
        out["aws_allow_http"] = "true"
    for src, dst in (
        ("region", "aws_region"),
        ("access_key", "aws_access_key_id"),
        ("secret_key", "aws_secret_access_key"),
        ("session_token", "aws_session_token"),
    ):
        if src in params:
            out[dst] = params.pop(src)
    if params:
        raise StorageError(f"{base}: unknown URI parameter(s) {', '.join(sorted(params))}; use storage_options")
    return base, out


_URI_RE = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$")


def split_uri(uri: str) -> tuple[str, str, str] | None:
    """``(scheme, bucket/container, key prefix)`` of an object-store URI, ``None`` for anything else."""
    m = _URI_RE.match(uri)
    if m is None:
        return None
    scheme = m.group("scheme").lower()
    rest = m.group("rest")
    if "@" in rest.split("/", 1)[0] and scheme in ("abfs", "abfss"):
        # abfs://<container>@<account>.dfs.core.windows.net/<path>
        authority, _, path = rest.partition("/")
        return scheme, authority, path.strip("/")
    bucket, _, path = rest.partition("/")
    return scheme, bucket, path.strip("/")
