"""fiolake.s3read signs as botocore does: the same Authorization for the same request.

botocore is the reference (the store asks it whenever the reader cannot answer), so any
request the reader may send — keys with spaces, plus signs, unicode, tildes; listings
with every query parameter; session tokens; regions — must carry botocore's signature.
"""

from __future__ import annotations

from datetime import UTC, datetime
from unittest import mock

import botocore.auth
import pytest
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from hypothesis import given, settings
from hypothesis import strategies as st

from fiolake.s3client import S3Settings
from fiolake.s3read import S3Reader, signature_v4, usable

WHEN = datetime(2026, 12, 7, 5, 6, 7, tzinfo=UTC)
keys = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=40)
queries = st.dictionaries(
    st.sampled_from(["prefix", "start-after", "continuation-token", "delimiter"]), keys
)


def _botocore_authorization(settings_: S3Settings, method: str, url: str) -> str:
    request = AWSRequest(method=method, url=url, headers={})
    credentials = Credentials(settings_.access_key, settings_.secret_key, settings_.session_token)
    with mock.patch.object(
        botocore.auth, "get_current_datetime", lambda: WHEN.replace(tzinfo=None)
    ):
        botocore.auth.S3SigV4Auth(credentials, "s3", settings_.region).add_auth(request)
    return str(request.headers["Authorization"])


@settings(max_examples=150, deadline=None)
@given(
    key=keys,
    query=queries,
    token=st.none() | st.text("abcXYZ019+/=", min_size=1, max_size=30),
    region=st.sampled_from(["us-east-1", "eu-central-1", "garage"]),
    method=st.sampled_from(["GET", "HEAD"]),
    virtual=st.booleans(),
)
def test_the_signature_is_botocores(
    key: str,
    query: dict[str, str],
    token: str | None,
    region: str,
    method: str,
    virtual: bool,
) -> None:
    s3 = S3Settings(
        endpoint="https://127.0.0.1:9900", access_key="AKIA/EXAMPLE", secret_key="s3cr3t+/=",
        session_token=token, region=region, virtual_hosted=virtual,
    )  # fmt: skip
    reader = S3Reader(s3, "lake-bucket")
    path, target = reader.target(key, query)
    headers = signature_v4(s3, method, reader.host, path, query, WHEN)
    expected = _botocore_authorization(s3, method, f"https://{reader.host}{target}")
    assert headers["authorization"] == expected
    assert headers["x-amz-date"] == "20261207T050607Z"
    assert ("x-amz-security-token" in headers) == (token is not None)


def test_the_reader_serves_only_keys_over_https_without_a_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    keyed = S3Settings(endpoint="https://s3.example:443", access_key="a", secret_key="b")
    assert usable(keyed)
    assert not usable(S3Settings(endpoint="https://s3.example"))  # botocore's credential chain
    assert not usable(
        S3Settings(endpoint="https://s3.example/base", access_key="a", secret_key="b")
    )
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    assert not usable(keyed)


def test_headers_the_reader_cannot_read_are_left_to_botocore() -> None:
    from fiolake.s3read import Answer, Unanswered

    odd = Answer(200, {"date": "yesterday", "content-length": "12x"}, b"")
    for read in (lambda: odd.date("date"), lambda: odd.date("last-modified"), odd.size):
        with pytest.raises(Unanswered):
            read()
    fine = Answer(200, {"date": "Mon, 07 Dec 2026 05:06:07 GMT", "content-length": "12"}, b"")
    assert fine.date("date") == WHEN and fine.size() == 12


def test_the_default_port_is_signed_as_http_client_sends_it() -> None:
    s3 = S3Settings(endpoint="https://s3.example:443", access_key="a", secret_key="b")
    assert S3Reader(s3, "bucket").host == "s3.example"  # the Host http.client sends
    other = S3Settings(endpoint="https://s3.example:9000", access_key="a", secret_key="b")
    assert S3Reader(other, "bucket").host == "s3.example:9000"
