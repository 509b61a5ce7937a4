"""Client exceptions of OpenBao (hvac/requests) and MinIO (minio-py/urllib3) as FiolakeErrors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import hvac.exceptions
import requests
import urllib3.exceptions
from minio.error import MinioException

from fiolake.errors import FiolakeError
from fiolake.stack.process import log_tail


@contextlib.contextmanager
def service_errors(bao_log: Path | None, minio_log: Path | None) -> Iterator[None]:
    """Turn OpenBao/MinIO client exceptions into FiolakeErrors that quote the server log."""

    def tail(path: Path | None) -> str:
        return f"; last log lines:\n{log_tail(path)}" if path else ""

    try:
        yield
    except FiolakeError:
        raise
    except (hvac.exceptions.VaultError, requests.RequestException) as exc:
        raise FiolakeError(f"OpenBao request failed: {exc}{tail(bao_log)}") from exc
    except (MinioException, urllib3.exceptions.HTTPError) as exc:
        raise FiolakeError(f"MinIO admin request failed: {exc}{tail(minio_log)}") from exc
