"""`fiolake import` into the real MinIO lake with the importer role's credentials: written
like a runner writes (Parquet, then the create-only commit), readable, and a second import
adds nothing. The importer may not publish jobs or delete; the analyst cannot import."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.cli import cli

CORPUS = Path(__file__).parent.parent.parent / "data" / "fio-outputs"
FILES = [str(CORPUS / "vc-fio-3.13.txt"), str(CORPUS / "pbench-fio-3.7-client-server.txt")]


def test_import_into_minio_with_the_importer_role(minio_lake, stack) -> None:  # noqa: ANN001
    env = {**stack.environ("importer"), "FIOLAKE_LAKE": minio_lake.admin["FIOLAKE_LAKE"]}
    args = ["import", *FILES, "--backend", "s3-import", "--format", "csv"]
    first = CliRunner().invoke(cli, args, env=env)
    assert first.exit_code == 0, first.output
    assert first.output.count(",imported") == 3  # one run, then two client/server hosts
    again = CliRunner().invoke(cli, args, env=env)
    assert again.exit_code == 0, again.output
    assert again.output.count(",skipped") == 3 and ",imported" not in again.output
    query = "SELECT origin, count(*) AS n FROM runs GROUP BY origin"
    read = CliRunner().invoke(cli, ["sql", query, "--format", "csv"], env=minio_lake.admin)
    assert read.exit_code == 0, read.output
    assert "import,3" in read.output


def test_the_analyst_role_cannot_import(minio_lake, stack) -> None:  # noqa: ANN001
    env = {**stack.environ("analyst"), "FIOLAKE_LAKE": minio_lake.admin["FIOLAKE_LAKE"]}
    result = CliRunner().invoke(cli, ["import", FILES[0], "--backend", "x"], env=env)
    assert result.exit_code == 1
    assert "Traceback" not in result.output and "Error: " in result.output


def test_the_importer_role_may_not_publish_jobs_or_delete(minio_lake, stack) -> None:  # noqa: ANN001
    from fiolake.errors import AccessDenied
    from fiolake.store import S3Store

    prefix = minio_lake.admin["FIOLAKE_LAKE"].split("/", 3)[3]
    importer = S3Store(stack.bucket, prefix, stack.s3_settings("importer"))
    importer.put("results/runs/date=2020-01-01/r-x.parquet", b"x")
    for key in ("jobs/c-x/j.json", "claims/j.json", "fleet/r.json", "compacted/x"):
        with pytest.raises(AccessDenied):
            importer.put(key, b"x")
    with pytest.raises(AccessDenied):
        importer.delete("results/runs/date=2020-01-01/r-x.parquet")
