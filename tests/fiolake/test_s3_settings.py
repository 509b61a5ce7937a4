"""One place says how every S3 client reaches the store: the endpoint (FIOLAKE_S3_ENDPOINT,
else boto3's AWS_ENDPOINT_URL), region and addressing reach botocore, DuckDB's httpfs
secret and delta-rs' object_store options alike."""

from __future__ import annotations

import pytest

from fiolake.config import Settings
from fiolake.errors import UsageProblem
from fiolake.s3client import s3_client

BASE = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}


def test_aws_endpoint_url_is_the_endpoint_when_fiolake_s3_endpoint_is_unset() -> None:
    s3 = Settings.from_env({**BASE, "AWS_ENDPOINT_URL": "https://s3.example:9000"}).s3
    assert s3 is not None and s3.endpoint == "https://s3.example:9000"
    both = {**BASE, "AWS_ENDPOINT_URL": "https://a:1", "FIOLAKE_S3_ENDPOINT": "https://b:2"}
    assert Settings.from_env(both).s3.endpoint == "https://b:2"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("addressing", "boto", "duckdb", "object_store"),
    [(None, "path", "path", "false"), ("path", "path", "path", "false"),
     ("virtual", "virtual", "vhost", "true")],
)  # fmt: skip
def test_addressing_reaches_every_client(
    addressing: str | None, boto: str, duckdb: str, object_store: str
) -> None:
    env = {**BASE, "FIOLAKE_S3_ENDPOINT": "https://s3.example", "AWS_REGION": "eu-west-3"}
    if addressing is not None:
        env["FIOLAKE_S3_ADDRESSING"] = addressing
    s3 = Settings.from_env(env).s3
    assert s3 is not None
    assert s3_client(s3).meta.config.s3["addressing_style"] == boto
    secret = s3.duckdb_secret()
    assert (secret["URL_STYLE"], secret["REGION"], secret["ENDPOINT"]) == (
        duckdb, "eu-west-3", "s3.example"
    )  # fmt: skip
    options = s3.object_store_options()
    assert (options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"], options["AWS_REGION"]) == (
        object_store, "eu-west-3"
    )  # fmt: skip
    assert options["AWS_CONDITIONAL_PUT"] == "etag"


def test_an_unknown_addressing_is_refused() -> None:
    env = {**BASE, "FIOLAKE_S3_ENDPOINT": "https://s3.example", "FIOLAKE_S3_ADDRESSING": "vhost"}
    with pytest.raises(UsageProblem, match="^FIOLAKE_S3_ADDRESSING is 'vhost' — set it to"):
        Settings.from_env(env)
