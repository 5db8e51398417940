"""The storage layer on a real S3 API server (moto, 127.0.0.1): request shapes, atomic creates, copies, options."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from evt_toolkit.errors import ObjectExistsError, ObjectNotFoundError, StorageError, UnsupportedFeatureError
from evt_toolkit.storage import StorageOptions, TableStorage, coalesce_ranges, count_requests, options_from_hadoop_conf
from tests.conftest import S3Server


@pytest.fixture()
def s3(s3_server: S3Server, s3_bucket: str) -> TableStorage:
    return TableStorage.from_uri(f"s3a://{s3_bucket}/warehouse/t", s3_server.options)


def test_single_put_write_and_create_only(s3: TableStorage) -> None:
    with count_requests() as c:
        s3.write_bytes_atomic(".hoodie/20250101000000000.deltacommit.requested", b"")
    got = c.counts()
    assert (got.put, got.copy, got.delete, got.total) == (1, 0, 0, 1), got
    with pytest.raises(ObjectExistsError) as err:
        s3.write_bytes_atomic(".hoodie/20250101000000000.deltacommit.requested", b"other")
    assert f"s3a://{s3.uri.split('://')[1].split('/')[0]}/warehouse/t/.hoodie/" in str(err.value)
    assert s3.read_bytes(".hoodie/20250101000000000.deltacommit.requested") == b""
    s3.write_bytes_atomic("p/f.log", b"a", overwrite=True)
    s3.write_bytes_atomic("p/f.log", b"b", overwrite=True)
    assert s3.read_bytes("p/f.log") == b"b"


def test_put_if_absent_race_has_one_winner(s3: TableStorage) -> None:
    wins: list[int] = []
    losses: list[str] = []
    barrier = threading.Barrier(8)

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            s3.put_if_absent(".hoodie/20250101000000001.commit", f"writer {i}".encode())
            wins.append(i)
        except ObjectExistsError as exc:
            losses.append(str(exc))

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Every attempt either created the object or was told it exists (no other error), naming it. S3 decides a
    # conditional PUT atomically: one winner. The test server (moto) checks and then writes, so under load a second
    # attempt can pass its check before the first one's write lands; what the storage layer owns is the rest.
    assert len(wins) + len(losses) == 8 and wins and losses
    assert s3.read_bytes(".hoodie/20250101000000001.commit") in {f"writer {i}".encode() for i in wins}
    assert all(s3.full_path(".hoodie/20250101000000001.commit") in m for m in losses)


def test_local_create_only_race_has_one_winner(tmp_path: Path) -> None:
    local = TableStorage.from_uri(tmp_path)
    wins: list[int] = []
    barrier = threading.Barrier(8)

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            local.write_bytes_atomic(".hoodie/x.commit", f"w{i}".encode())
            wins.append(i)
        except ObjectExistsError:
            pass

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert (tmp_path / ".hoodie/x.commit").read_bytes() == f"w{wins[0]}".encode()
    assert sorted(p.name for p in (tmp_path / ".hoodie").iterdir()) == ["x.commit"], "no temporary file is left"


def test_server_side_copy_moves_no_bytes(s3: TableStorage) -> None:
    data = bytes(range(256)) * 4096
    s3.write_bytes_atomic("p/.f_1.log.1_0-0-0", data)
    with count_requests() as c:
        s3.copy_file("p/.f_1.log.1_0-0-0", "p/.f_2.log.1_0-0-0")
    got = c.counts()
    assert got.copy == 1 and got.bytes_read == 0 and got.bytes_written == 0, got
    assert s3.read_bytes("p/.f_2.log.1_0-0-0") == data
    with pytest.raises(ObjectExistsError, match="already exists"):
        s3.copy_file("p/.f_1.log.1_0-0-0", "p/.f_2.log.1_0-0-0")
    with pytest.raises(ObjectNotFoundError):
        s3.copy_file("p/missing", "p/other")


def test_reads_whole_small_files_and_ranges_large_ones(s3_server: S3Server, s3: TableStorage) -> None:
    small = b"x" * 4000
    big = bytes(range(256)) * (12 * 4096)  # 12 MiB > the 8 MiB whole-object limit
    s3.write_many({"p/small.log": small, "p/big.parquet": big})
    fresh = TableStorage.from_uri(s3.uri, s3_server.options)
    files, _ = fresh.list_dir("p")
    assert {(f.name, f.size) for f in files} == {("small.log", 4000), ("big.parquet", len(big))}
    with count_requests() as c, fresh.open_input("p/small.log") as f:
        f.seek(100)
        assert f.read(10) == small[100:110]
        f.seek(3000)
        assert f.read() == small[3000:]
    assert (c.counts().get, c.counts().get_range, c.counts().head) == (1, 0, 0), c.counts()
    with count_requests() as c, fresh.open_input("p/big.parquet") as f:
        f.seek(len(big) - 8)
        assert f.read(8) == big[-8:]
        f.seek(len(big) - 100)
        assert f.read(50) == big[-100:-50]
        f.seek(5)
        assert f.read(3) == big[5:8]
    assert c.counts().get_range == 2 and c.counts().get == 0, c.counts()
    with count_requests() as c:
        parts = fresh.read_ranges("p/big.parquet", [(0, 10), (100, 200), (11_000_000, 11_000_010)])
    assert parts == [big[0:10], big[100:200], big[11_000_000:11_000_010]]
    assert c.counts().get_range == 2, "two nearby ranges share one request"
    assert coalesce_ranges([(0, 10), (100, 200), (11_000_000, 11_000_010)]) == [(0, 200), (11_000_000, 11_000_010)]


def test_prefetch_is_parallel_and_listing_is_one_request(s3_server: S3Server, s3: TableStorage) -> None:
    s3.write_many({f"p/.f{i}_1.log.1_0-0-0": bytes([i]) * 100 for i in range(50)})
    fresh = TableStorage.from_uri(s3.uri, s3_server.options)
    with count_requests() as c:
        files, dirs = fresh.list_dir("p")
        fresh.prefetch(f.path for f in files)
        data = {f.path: fresh.read_bytes(f.path) for f in files}
        for f in files:
            with fresh.open_input(f.path) as fh:
                fh.read()
    assert len(files) == 50 and not dirs
    assert c.counts().list == 1 and c.counts().get == 50 and c.counts().head == 0, c.counts()
    assert all(v == bytes([int(k.split("_")[0][4:])]) * 100 for k, v in data.items())


def test_no_directory_markers(s3: TableStorage, s3_server: S3Server) -> None:
    s3.makedirs(".hoodie/.aux")
    assert s3.list_dir("") == ([], [])
    s3.write_bytes_atomic("region=a/x.parquet", b"1")
    assert s3.list_dir("")[1] == ["region=a"]
    assert s3.exists("region=a") and s3.is_dir("region=a") and not s3.exists("region=b")
    s3.delete_dir("region=a")
    assert s3.list_dir("") == ([], [])


def test_symlinks_are_local_only(s3: TableStorage, tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFeatureError, match="no symlinks"):
        s3.symlink("target", "p/link")
    assert not s3.is_symlink("p/link")
    local = TableStorage.from_uri(tmp_path)
    local.write_bytes_atomic("p/target", b"t")
    local.symlink("target", "p/link")
    assert local.is_symlink("p/link") and local.read_link("p/link") == "target"
    assert local.read_bytes("p/link") == b"t"
    with pytest.raises(ObjectExistsError):
        local.symlink("target", "p/link")


def test_missing_bucket_names_the_full_uri(s3_server: S3Server) -> None:
    st = TableStorage.from_uri("s3a://no-such-bucket-evt/tables/t", s3_server.options)
    with pytest.raises(ObjectNotFoundError, match=r"s3a://no-such-bucket-evt/tables/t/.hoodie/hoodie.properties"):
        st.read_bytes(".hoodie/hoodie.properties")


def test_credentials_never_shown(s3_server: S3Server, s3_bucket: str) -> None:
    opts = dict(s3_server.options)
    secret = opts["aws_secret_access_key"]
    st = TableStorage.from_uri(f"s3://{s3_bucket}/t", opts)
    so = StorageOptions.of(opts)
    for text in (repr(st), repr(so), str(so), str(so.redacted()), st.full_path("x")):
        assert secret not in text and opts["aws_access_key_id"] not in text
    bad = TableStorage.from_uri(f"s3://{s3_bucket}/t", {**opts, "aws_endpoint_url": "http://127.0.0.1:9"})
    with pytest.raises(StorageError) as err:
        bad.read_bytes("x")
    assert secret not in str(err.value) and f"s3://{s3_bucket}/t/x" in str(err.value)
    with pytest.raises(StorageError, match="unknown S3 storage option 'aws_no_such_option'"):
        TableStorage.from_uri(f"s3://{s3_bucket}/t", {**opts, "aws_no_such_option": secret + "zz"})


def test_options_from_spark_s3a_settings() -> None:
    conf = {
        "spark.hadoop.fs.s3a.endpoint": "127.0.0.1:9000",
        "spark.hadoop.fs.s3a.access.key": "AK",
        "spark.hadoop.fs.s3a.secret.key": "SK",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.bucket.special.endpoint": "http://127.0.0.1:9999",
        "spark.sql.shuffle.partitions": "2",
    }
    assert options_from_hadoop_conf(conf) == {
        "aws_endpoint_url": "http://127.0.0.1:9000",
        "aws_access_key_id": "AK",
        "aws_secret_access_key": "SK",
        "aws_allow_http": "true",
        "aws_virtual_hosted_style_request": "false",
    }
    assert options_from_hadoop_conf(conf, "special")["aws_endpoint_url"] == "http://127.0.0.1:9999"


def test_legacy_query_uri_still_works(s3_server: S3Server, s3_bucket: str) -> None:
    host = s3_server.endpoint.split("://", 1)[1]
    st = TableStorage.from_uri(
        f"s3://{s3_bucket}/t?endpoint_override={host}&scheme=http",
        {k: v for k, v in s3_server.options.items() if k != "aws_endpoint_url"},
    )
    assert st.uri == f"s3://{s3_bucket}/t"
    st.write_bytes_atomic("a", b"1")
    assert st.read_bytes("a") == b"1"
