"""Simple bucket index: our bucket ids must equal Hudi's for every record key.

Reference (apache/hudi, 0.14.x / 0.15.x):

* ``hudi-client/hudi-client-common/src/main/java/org/apache/hudi/index/bucket/BucketIdentifier.java`` —
  ``getBucketId(List<String> hashKeyFields, int numBuckets)`` returns
  ``(hashKeyFields.hashCode() & Integer.MAX_VALUE) % numBuckets``; ``getHashKeys(String recordKey, String
  indexKeyFields)`` calls ``KeyGenUtils.extractRecordKeysByFields(recordKey,
  Arrays.asList(indexKeyFields.split(",")))``;
  ``bucketIdStr`` is ``String.format("%08d", n)``; ``bucketIdFromFileId`` is ``Integer.parseInt(fileId.substring(0,
  8))``; ``newBucketFileIdPrefix(int)`` is ``FSUtils.createNewFileIdPfx().replaceFirst(".{8}", bucketIdStr(n))``.
* ``hudi-common/src/main/java/org/apache/hudi/keygen/KeyGenUtils.java`` — ``extractRecordKeysByFields`` (the
  ``split(",")`` / ``split(":", 2)`` stream version from HUDI-5302, replaced only in 1.0 by HUDI-8403).
* JDK ``java.lang.String.hashCode`` and ``java.util.AbstractList.hashCode``.

Hand-computed vectors below follow those definitions; when a JDK is installed, a small Java program (source embedded
here, compiled into a temporary directory) that contains the same Hudi logic runs on real ``String``/``List``
objects and must agree with us on random keys.
"""

from __future__ import annotations

import random
import shutil
import string
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evt_toolkit.errors import EvtError
from evt_toolkit.write.bucket import (
    bucket_file_id_prefix,
    bucket_id,
    bucket_id_from_file_id,
    bucket_id_str,
    bucket_ids,
    hash_keys,
    java_list_hash,
    java_string_hash,
    new_bucket_file_id,
)

# ---------------------------------------------------------------------------------------------------------------------
# Hand-computed vectors
# ---------------------------------------------------------------------------------------------------------------------


def test_java_string_hash_vectors() -> None:
    """``String.hashCode() = s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, wrapping int32.

    * ``"".hashCode() == 0``; ``"a" == 97``; ``"abc" == 97*961 + 98*31 + 99 == 96354``.
    * ``"Aa"`` and ``"BB"`` collide at 2112 (65*31+97 == 66*31+66).
    * ``"polygenelubricants".hashCode() == Integer.MIN_VALUE`` (overflow to exactly -2^31).
    * ``"é"`` (U+00E9) is one code unit: 233.
    * ``"😀"`` (U+1F600) is the surrogate pair D83D DE00: 0xD83D*31 + 0xDE00 == 1772899.
    """
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("abc") == 96354
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("é") == 233
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00 == 1772899
    assert java_string_hash("\ud800") == 0xD800  # a lone surrogate is one code unit, as in a Java String
    # Wrapping: 31 * "polygenelubricants".hashCode() + 'x' computed in int32.
    assert java_string_hash("polygenelubricantsx") == ((31 * -(2**31) + ord("x")) + 2**31) % 2**32 - 2**31


def test_java_list_hash_vectors() -> None:
    """``AbstractList.hashCode``: ``h = 1; h = 31*h + (e == null ? 0 : e.hashCode())``.

    * ``Collections.emptyList().hashCode() == 1``.
    * ``Arrays.asList("a", "b").hashCode() == 31*(31*1 + 97) + 98 == 4066``.
    * ``Collections.singletonList(null).hashCode() == 31``; ``singletonList("").hashCode() == 31`` too.
    * ``singletonList("polygenelubricants").hashCode() == 31 + Integer.MIN_VALUE == -2147483617``.
    """
    assert java_list_hash([]) == 1
    assert java_list_hash(["a", "b"]) == 4066
    assert java_list_hash([None]) == java_list_hash([""]) == 31
    assert java_list_hash(["polygenelubricants"]) == -2147483617


def test_bucket_id_vectors() -> None:
    """``(hashKeys.hashCode() & Integer.MAX_VALUE) % numBuckets``.

    * ``"abc"``: list hash 31 + 96354 == 96385; 96385 % 8 == 1.
    * ``"polygenelubricants"``: list hash -2147483617; & MAX_VALUE == 31; 31 % 4 == 3 (the mask, not abs()).
    * ``"a:x,b:y"`` hashed on a,b: ``Arrays.asList("x","y").hashCode()`` == 31*(31+120)+121 == 4802; % 10 == 2.
    """
    assert bucket_id("abc", ["id"], 8) == 1
    assert bucket_id("polygenelubricants", ["id"], 4) == 3
    assert bucket_id("a:x,b:y", "a,b", 10) == 4802 % 10 == 2
    assert bucket_ids(["abc", "polygenelubricants", "a:x,b:y"], "a,b", 8).tolist() == [1, 31 % 8, 4802 % 8]


def test_hash_keys_parsing_quirks() -> None:
    """``KeyGenUtils.extractRecordKeysByFields`` as of 0.14/0.15 (see module docstring)."""
    assert hash_keys("uuid-1", ["uuid"]) == ["uuid-1"]
    assert hash_keys("f1:a,f2:b,f3:c", ["f3", "f1"]) == ["a", "c"]  # record-key order, not hash-field order
    assert hash_keys("f1:a,f2:b", "f2") == ["b"]
    assert hash_keys("f1:__null__,f2:__empty__", "f1,f2") == [None, ""]
    assert hash_keys("f1:a,b,f2:c", "f1,f2") == ["a", "b", "c"]  # a ',' inside a value splits it
    assert hash_keys("f1:x:y", "f1") == ["x:y"]  # split(":", 2)
    assert hash_keys("2024-10-24 10:11:11", "ts") == []  # simple key with ':' loses its only part
    assert hash_keys("a,b", "id") == ["a", "b"]  # simple key with ',' is hashed as two values
    assert hash_keys("a,,", "id") == ["a"]  # String.split drops trailing empty strings
    assert hash_keys(",a", "id") == ["", "a"]
    assert hash_keys(",", "id") == []
    assert hash_keys("", "id") == [""]  # no separator: split returns the string itself
    # complex_key does not change Hudi's text-driven parse.
    assert hash_keys("a:b", ["a"], complex_key=False) == hash_keys("a:b", ["a"], complex_key=True) == ["b"]
    # The comma-separated config string is split like Java's String.split (trailing empties dropped).
    assert hash_keys("f1:a,f2:b", "f2,") == ["b"]


def test_file_ids() -> None:
    """Bucket file ids: ``bucketIdStr`` + the rest of a random UUID, and ``-0`` from ``FSUtils.createNewFileId``."""
    assert bucket_id_str(3) == "00000003"
    assert bucket_file_id_prefix(3, "0712b9f9-d2d5-4cae-bcf4-8fd7146af503") == "00000003-d2d5-4cae-bcf4-8fd7146af503"
    fid = new_bucket_file_id(42)
    assert fid.startswith("00000042-") and fid.endswith("-0") and len(fid) == 38
    uuid.UUID(fid[:-2].replace("00000042", "12345678", 1))  # the remainder is a UUID
    assert bucket_id_from_file_id(fid) == 42
    assert bucket_id_from_file_id("99999999-0000-0000-0000-000000000000-0") == 99_999_999
    for bad in (-1, 100_000_000):
        with pytest.raises(EvtError):
            bucket_id_str(bad)
    for bad_id in ("0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0", "1234", "+0000012-x"):
        with pytest.raises(EvtError):
            bucket_id_from_file_id(bad_id)
    for n in (0, -3, 2**31):
        with pytest.raises(EvtError):
            bucket_id("k", ["id"], n)
    with pytest.raises(EvtError):
        bucket_ids(pa.array(["a", None]), ["id"], 4)


def test_vectorized_matches_scalar_on_tricky_keys() -> None:
    rng = random.Random(7)
    alphabet = "ab,:_\u00e9\U0001f600x0"
    specials = ["f1:__null__,f2:__empty__", "", ",", ",,a,,", "a:", ":", "f1:", "f2:x:y,f1:z"]
    keys = []
    for _ in range(5000):
        key = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        keys.append(rng.choice(specials) + key if rng.random() < 0.2 else key)
    for fields in (["a", "f1"], "f2", ["ab"], "", ","):
        expected = [bucket_id(k, fields, 13) for k in keys]
        assert bucket_ids(keys, fields, 13).tolist() == expected
        chunked = pa.chunked_array([pa.array(keys[:100]), pa.array(keys[100:])])
        assert bucket_ids(chunked, fields, 13).tolist() == expected
        # Slices keep a buffer offset; large_string has 64-bit offsets.
        assert bucket_ids(pa.array(keys, pa.large_string())[37:], fields, 13).tolist() == expected[37:]
        assert bucket_ids(pa.array(keys)[1:-1], fields, 13).tolist() == expected[1:-1]
    assert bucket_ids(pa.array(keys).dictionary_encode(), "f1", 13).tolist() == [bucket_id(k, "f1", 13) for k in keys]
    assert bucket_ids([], "id", 4).dtype == np.int32 and len(bucket_ids([], "id", 4)) == 0


def test_vectorized_throughput_smoke() -> None:
    keys = pa.array([str(uuid.UUID(int=random.getrandbits(128))) for _ in range(200_000)])
    start = time.perf_counter()
    ids = bucket_ids(keys, "uuid", 64)
    elapsed = time.perf_counter() - start
    assert ids.min() >= 0 and ids.max() < 64
    assert ids[:1000].tolist() == [bucket_id(k, "uuid", 64) for k in keys[:1000].to_pylist()]
    assert elapsed < 5, f"{len(keys) / elapsed:,.0f} keys/s"


# ---------------------------------------------------------------------------------------------------------------------
# Cross-check against a JVM
# ---------------------------------------------------------------------------------------------------------------------

# The Hudi part is KeyGenUtils.extractRecordKeysByFields and BucketIdentifier.getBucketId as of 0.14/0.15; the rest is
# plumbing. Protocol: one request per line, "<mode>\t<hash fields>\t<buckets>\t<key as hex UTF-16 code units>".
_JAVA_SOURCE = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

public class HudiBucketOracle {
  static String[] extractRecordKeysByFields(String recordKey, List<String> fields) {
    String[] fieldKV = recordKey.split(",");
    return Arrays.stream(fieldKV).map(kv -> kv.split(":", 2))
        .filter(kvArray -> kvArray.length == 1 || fields.isEmpty() || (fields.contains(kvArray[0])))
        .map(kvArray -> {
          if (kvArray.length == 1) {
            return kvArray[0];
          } else if (kvArray[1].equals("__null__")) {
            return null;
          } else if (kvArray[1].equals("__empty__")) {
            return "";
          } else {
            return kvArray[1];
          }
        }).toArray(String[]::new);
  }

  static int getBucketId(String recordKey, String indexKeyFields, int numBuckets) {
    List<String> hashKeys = Arrays.asList(
        extractRecordKeysByFields(recordKey, Arrays.asList(indexKeyFields.split(","))));
    return (hashKeys.hashCode() & Integer.MAX_VALUE) % numBuckets;
  }

  static String fromHex(String hex) {
    char[] chars = new char[hex.length() / 4];
    for (int i = 0; i < chars.length; i++) {
      chars[i] = (char) Integer.parseInt(hex.substring(4 * i, 4 * i + 4), 16);
    }
    return new String(chars);
  }

  public static void main(String[] args) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
    String line;
    while ((line = in.readLine()) != null) {
      String[] p = line.split("\t", -1);
      String key = fromHex(p[3]);
      int result = p[0].equals("hash") ? key.hashCode() : getBucketId(key, p[1], Integer.parseInt(p[2]));
      out.println(result);
      out.flush();
    }
  }
}
"""


class _JavaOracle:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    def _ask(self, mode: str, key: str, fields: str = "", buckets: int = 1) -> int:
        units = key.encode("utf-16-be", "surrogatepass").hex()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{mode}\t{fields}\t{buckets}\t{units}\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def string_hash(self, s: str) -> int:
        return self._ask("hash", s)

    def bucket(self, key: str, fields: str, buckets: int) -> int:
        return self._ask("bucket", key, fields, buckets)


@pytest.fixture(scope="module")
def java_oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_JavaOracle]:
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.skip("javac/java not found: the JVM cross-check of String/List.hashCode and the bucket id is skipped")
    workdir: Path = tmp_path_factory.mktemp("hudi_bucket_oracle")
    (workdir / "HudiBucketOracle.java").write_text(_JAVA_SOURCE)
    subprocess.run([javac, "HudiBucketOracle.java"], cwd=workdir, check=True, capture_output=True, timeout=120)
    proc = subprocess.Popen(
        [java, "-Xshare:auto", "-cp", str(workdir), "HudiBucketOracle"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    try:
        yield _JavaOracle(proc)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def _random_keys(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    keys: list[str] = []
    for i in range(n):
        kind = i % 5
        if kind == 0:
            keys.append(str(uuid.UUID(int=rng.getrandbits(128))))
        elif kind == 1:
            keys.append(f"carrier:{rng.choice(['UA', 'AA', 'B6'])},flight:{rng.randint(1, 9999)},origin:JFK")
        elif kind == 2:
            keys.append("".join(rng.choice(string.printable) for _ in range(rng.randint(0, 30))))
        elif kind == 3:
            keys.append(f"a:{rng.choice(['__null__', '__empty__', 'x,y', '1:2', ''])},b:{rng.random()}")
        else:
            keys.append(
                "".join(chr(rng.choice([rng.randint(32, 0xD7FF), rng.randint(0xE000, 0xFFFF)])) for _ in range(5))
            )
    return keys


@pytest.mark.slow
def test_bucket_ids_match_jvm(java_oracle: _JavaOracle) -> None:
    keys = _random_keys(3000, seed=11)
    for fields, buckets in (("uuid", 256), ("carrier,flight,origin", 7), ("a,b", 1), ("b", 1_000_003)):
        expected = [java_oracle.bucket(k, fields, buckets) for k in keys]
        assert [bucket_id(k, fields, buckets) for k in keys] == expected
        assert bucket_ids(keys, fields, buckets).tolist() == expected
    # Lone and paired surrogates: Java strings hold UTF-16 code units, whatever they pair up to.
    for k in [*keys[:500], "\ud800", "a\udfffb", "\ud83d\ude00", "\U0001f600", "\ude00\ud83d"]:
        assert java_string_hash(k) == java_oracle.string_hash(k)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(s=st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_characters="\n\r"), max_size=40))
def test_property_string_hash_matches_jvm(java_oracle: _JavaOracle, s: str) -> None:
    assert java_string_hash(s) == java_oracle.string_hash(s)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    key=st.lists(
        st.sampled_from(["a", "b", ":", ",", "_", "x", "\u00e9", "\U0001f600", "__null__", "__empty__"]), max_size=12
    ).map("".join),
    fields=st.sampled_from(["a", "a,b", "b", "", ",", "x:"]),
    buckets=st.integers(1, 2**31 - 1),
)
def test_property_bucket_id_matches_jvm(java_oracle: _JavaOracle, key: str, fields: str, buckets: int) -> None:
    expected = java_oracle.bucket(key, fields, buckets)
    assert bucket_id(key, fields, buckets) == expected
    assert bucket_ids([key], fields, buckets).tolist() == [expected]
