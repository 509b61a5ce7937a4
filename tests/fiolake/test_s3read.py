"""fiolake.s3read against the real servers: the reader's answers are botocore's, and what
it cannot answer goes to botocore, whose errors the store has always raised."""

from __future__ import annotations

import dataclasses
import secrets
import subprocess
import sys

import pytest

from fiolake.errors import AccessDenied, NotFound
from fiolake.s3client import s3_client
from fiolake.s3read import S3Reader, Unanswered
from fiolake.store import S3Store
from tests.versitygw import S3Server

pytestmark = pytest.mark.stack

# Keys the reader must encode, sign and decode as botocore does.
KEYS = [
    "plain/a.parquet",
    "space here/b c.json",
    "plus+sign/x+y=z&w.json",
    "unicode/naïve—ü/π.bin",
    "tilde~/percent%41/semi;colon,comma",
    "deep/1/2/3/4/leaf",
]


def _stores(server: S3Server) -> tuple[S3Store, S3Store]:
    """The same fresh prefix twice: read through the reader, and through botocore alone."""
    prefix = f"t-{secrets.token_hex(6)}"
    light = S3Store(server.bucket, prefix, server.settings)
    heavy = S3Store(server.bucket, prefix, server.settings, client=s3_client(server.settings))
    assert light.reader is not None and heavy.reader is None
    return light, heavy


def test_reads_are_botocores_on_each_real_server(s3_server: S3Server) -> None:
    light, heavy = _stores(s3_server)
    for i, key in enumerate(KEYS):
        heavy.put(key, f"body {i}".encode() * (i + 1))
    light.reader = S3Reader(s3_server.settings, s3_server.bucket, page_size=2)  # 3+ pages
    for key in KEYS:
        data, info = light.get(key)
        assert (data, info.etag, info.last_modified, info.size) == (
            heavy.get(key)[0],
            *(lambda i: (i.etag, i.last_modified, i.size))(heavy.get(key)[1]),
        )
        assert light.head(key) is not None
        head, reference = light.head(key), heavy.head(key)
        assert head is not None and reference is not None
        assert (head.etag, head.last_modified, head.size) == (
            reference.etag, reference.last_modified, reference.size
        )  # fmt: skip
    assert light.head("missing/key") is None
    assert list(light.list("")) == list(heavy.list("")) == sorted(KEYS)
    assert list(light.list("", start_after=KEYS[1])) == list(heavy.list("", start_after=KEYS[1]))
    assert list(light.list("deep/")) == ["deep/1/2/3/4/leaf"]
    assert sorted(light.list_children("")) == sorted(heavy.list_children(""))
    assert sorted(light.list_children("")) == sorted({k.split("/")[0] for k in KEYS})
    assert abs((light.server_time() - heavy.server_time()).total_seconds()) < 5


def test_what_the_reader_cannot_answer_raises_botocores_error(s3_server: S3Server) -> None:
    light, heavy = _stores(s3_server)
    with pytest.raises(NotFound) as through_reader:
        light.get("never/written")
    with pytest.raises(NotFound) as through_botocore:
        heavy.get("never/written")
    assert str(through_reader.value) == str(through_botocore.value)
    wrong = dataclasses.replace(s3_server.settings, secret_key="not-the-secret")
    reader = S3Reader(wrong, s3_server.bucket)
    with pytest.raises(Unanswered, match="HTTP 403"):
        list(reader.list(""))
    messages = []
    for client in (None, s3_client(wrong)):  # through the reader, then botocore alone
        with pytest.raises(AccessDenied) as got:
            list(S3Store(s3_server.bucket, "", wrong, client=client).list(""))
        messages.append(str(got.value))
    assert messages[0] == messages[1]
    assert "refused the credentials" in messages[0]


def test_a_listing_cut_short_goes_on_through_botocore_without_repeats(
    s3_server: S3Server,
) -> None:
    light, heavy = _stores(s3_server)
    for key in KEYS:
        heavy.put(key, b"x")
    reader = S3Reader(s3_server.settings, s3_server.bucket, page_size=2)
    pages = {"sent": 0}
    real = reader.request

    def second_page_fails(method, key, query=None):  # noqa: ANN001, ANN202
        pages["sent"] += 1
        if pages["sent"] == 2:
            raise Unanswered("the connection dropped")  # a fault the server will not make
        return real(method, key, query)

    reader.request = second_page_fails  # type: ignore[method-assign]
    light.reader = reader
    assert list(light.list("")) == sorted(KEYS)
    pages["sent"] = 0
    assert sorted(light.list_children("")) == sorted({k.split("/")[0] for k in KEYS})


def test_opening_and_reading_an_s3_lake_never_loads_botocore(s3_server: S3Server) -> None:
    store = S3Store(s3_server.bucket, f"t-{secrets.token_hex(6)}", s3_server.settings)
    store.put("commits/x", b"{}")
    s = s3_server.settings
    code = (
        "import sys\n"
        "from fiolake.s3client import S3Settings\n"
        "from fiolake.store import S3Store\n"
        f"s = S3Settings(endpoint={s.endpoint!r}, ca_bundle={s.ca_bundle!r}, "
        f"access_key={s.access_key!r}, secret_key={s.secret_key!r})\n"
        f"store = S3Store({s3_server.bucket!r}, {store.prefix!r}, s)\n"
        "assert list(store.list('commits/')) == ['commits/x']\n"
        "assert store.get('commits/x')[0] == b'{}' and store.head('commits/x') is not None\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('botocore', 'boto3')))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"
