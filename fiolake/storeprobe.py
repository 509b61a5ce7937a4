"""The store probe: proof that an S3 endpoint + bucket honours conditional writes.

Exactly-once commits, leases and the compaction lock rest on PUT with `If-None-Match: *`
(a second create gets 412) and PUT with `If-Match: "<etag>"`. Some S3 servers answer 200
and overwrite instead (GCS's interoperability API, Garage 2.0, Ceph's dbstore; SeaweedFS
4.16 under concurrency), and nothing else would tell. So every command that writes an S3
lake first runs these steps on a scratch prefix of the lake, which it removes whatever
happens:

1. create a key with If-None-Match: *            → 2xx
2. create it again                                → 412 (409: a lost race, also fine)
3. overwrite with If-Match and a stale ETag       → 412
4. overwrite with If-Match and the current ETag   → 2xx
5. N parallel creates of one fresh key            → exactly one wins

A store passing them is remembered per endpoint + bucket for `VERDICT_TTL` in a JSON file
(`Settings.probe_cache`), with the steps, so a runner pays the probe once per start and
`fiolake lake check --store` can show what was sent and what came back.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from fiolake import layout
from fiolake.errors import NotFound, UsageProblem
from fiolake.s3client import DIRECTORY_RACE, error_code, put_object, s3_client, s3_error
from fiolake.store import ObjectStore, S3Store

log = logging.getLogger(__name__)

VERDICT_TTL = timedelta(hours=24)
PARALLEL_CREATES = 8
DOC = "docs/stores.md"
_FIX = (
    "fiolake cannot commit exactly once there; use a store that honours conditional writes "
    "(AWS S3, MinIO, Cloudflare R2, versitygw >= 1.1.0, Ceph RGW on RADOS, SeaweedFS >= 4.18) "
    f"or a local directory lake ({DOC})"
)


_HEADERS = {"IfNoneMatch": "If-None-Match", "IfMatch": "If-Match"}  # botocore's names


class StoreRefused(UsageProblem):
    """The store failed a probe step: fiolake will not write a lake there (exit 2)."""


@dataclass(frozen=True)
class ProbeStep:
    """One request of the probe: what was sent, what came back, and whether that is right."""

    name: str
    sent: str
    got: str
    ok: bool
    expected: str


@dataclass
class ProbeReport:
    """The probe's verdict on one endpoint + bucket."""

    endpoint: str
    bucket: str
    steps: list[ProbeStep] = field(default_factory=list)
    checked_at: str = ""
    elapsed_s: float = 0.0
    cached: bool = False
    # The refusal's "ignores If-None-Match (a second create returned 200)" part; "" if passed.
    failure: str = ""

    @property
    def passed(self) -> bool:
        """True when every step came back as a store fiolake can commit on must answer."""
        return not self.failure and bool(self.steps) and all(s.ok for s in self.steps)

    def refusal(self) -> StoreRefused:
        """The error a writing command exits with on this store."""
        return StoreRefused(f"s3://{self.bucket} at {self.endpoint} {self.failure} — {_FIX}")

    def as_json(self) -> dict[str, Any]:
        """The report as plain data (the cache file, `lake check --store --format json`)."""
        data = asdict(self)
        data["passed"] = self.passed
        return data


@dataclass(frozen=True)
class _Answer:
    status: int | None  # None: no HTTP answer at all (connection dropped, TLS cut)
    text: str
    etag: str = ""
    error: Exception | None = None


def _send(call: Callable[[], dict[str, Any]]) -> _Answer:
    """Run one S3 call; its status and code, whatever it was (errors are answers here)."""
    try:
        resp = call()
    except ClientError as exc:
        meta = exc.response.get("ResponseMetadata", {})
        code = error_code(exc)
        status = meta.get("HTTPStatusCode")
        return _Answer(status, f"{status} {code}".strip(), error=exc)
    except BotoCoreError as exc:
        return _Answer(None, f"no answer ({type(exc).__name__}: {exc})", error=exc)
    status = resp.get("ResponseMetadata", {}).get("HTTPStatusCode", 200)
    return _Answer(status, str(status), resp.get("ETag", "").strip('"'))


def _unjudgeable(status: int | None) -> bool:
    # 403/404 (keys, policy, no bucket) and 5xx say nothing about conditional writes;
    # 501 NotImplemented does: the store refuses them loudly (Backblaze B2).
    return status in (400, 401, 403, 404) or (
        status is not None and status >= 500 and status != 501
    )


def _is_2xx(answer: _Answer) -> bool:
    return answer.status is not None and 200 <= answer.status < 300


def _lost(answer: _Answer) -> bool:
    # AWS S3 may answer a concurrent loser 409 ConditionalRequestConflict instead of 412.
    return answer.status in (412, 409)


class _Prober:
    """The probe's requests on one scratch prefix (`<lake prefix>probe/<random>/`)."""

    def __init__(self, store: S3Store, parallel: int):
        # One try per request: a retried create reads its own success as a 412.
        self.client = s3_client(store.settings, attempts=1)
        self.store = store
        self.bucket = store.bucket
        self.scratch = f"{store.prefix}{layout.PROBE_PREFIX}{secrets.token_hex(8)}/"
        self.parallel = parallel
        self.written: set[str] = set()

    def put(
        self, key: str, body: bytes, conditions: dict[str, str], *, racing: bool = False
    ) -> _Answer:
        """PUT one scratch key; its answer, or the store's error when no verdict can be
        drawn from it (403, no bucket, 5xx other than 501 NotImplemented, a folder where
        the key goes; no answer at all unless `racing`, where a dropped connection may be
        a lost race)."""
        self.written.add(key)
        answer = _send(
            lambda: put_object(
                self.client, Bucket=self.bucket, Key=self.scratch + key, Body=body, **conditions
            )
        )
        if answer.error is not None and (
            _unjudgeable(answer.status)
            or (answer.status is None and not racing)
            or error_code(answer.error) == DIRECTORY_RACE
        ):
            raise self._error(answer.error, key)
        return answer

    def _error(self, exc: Exception, key: str) -> Exception:
        return s3_error(exc, self.scratch + key, url=self.store.url,
                        endpoint=self.store.settings.endpoint, bucket=self.bucket)  # fmt: skip

    def read(self, key: str) -> bytes | None:
        try:
            body: bytes = self.client.get_object(Bucket=self.bucket, Key=self.scratch + key)[
                "Body"
            ].read()
        except Exception as exc:  # noqa: BLE001 - a missing key is an answer; others are ours
            err = self._error(exc, key)
            if isinstance(err, NotFound):
                return None
            raise err from exc
        return body

    def remove(self) -> None:
        """Delete every scratch key (best effort beyond the first error: it is reported)."""
        first: Exception | None = None
        for key in sorted(self.written):
            try:
                self.client.delete_object(Bucket=self.bucket, Key=self.scratch + key)
            except Exception as exc:  # noqa: BLE001 - keep removing the rest
                first = first or self._error(exc, key)
        if first is not None:
            raise first

    def sequential(self, report: ProbeReport) -> bool:
        """Steps 1-4 on one key; False (with `report.failure` set) at the first wrong answer.

        After an ignored second create the ETag would have moved; on a store that honours
        it, the ETag of the first create is still the current one for step 4.
        """
        key, etag = "sequential", ""
        # (step, conditions (None: If-Match with the first ETag), judge, expected, failure)
        steps: list[tuple[str, dict[str, str] | None, Callable[[_Answer], bool], str, str]] = [
            ("create", {"IfNoneMatch": "*"}, _is_2xx, "2xx",
             "refuses If-None-Match (a create with If-None-Match: * returned {got})"),
            ("second create", {"IfNoneMatch": "*"}, _lost, "412 (or 409)",
             "ignores If-None-Match (a second create returned {got})"),
            ("stale If-Match", {"IfMatch": f'"{"0" * 32}"'}, _lost, "412",
             "ignores If-Match (a write with a stale ETag returned {got})"),
            ("current If-Match", None, _is_2xx, "2xx",
             "refuses If-Match (a write with the current ETag returned {got})"),
        ]  # fmt: skip
        for n, (name, conditions, judge, expected, failure) in enumerate(steps, 1):
            conditions = conditions or {"IfMatch": f'"{etag}"'}
            answer = self.put(key, f"probe {n}".encode(), conditions)
            ok = judge(answer)
            etag = etag or answer.etag
            sent = " ".join(f"{_HEADERS[k]}: {v}" for k, v in conditions.items())
            got = f"{answer.text} ETag {answer.etag}" if ok and n == 1 else answer.text
            report.steps.append(ProbeStep(name, f"PUT {key} {sent}", got, ok, expected))
            if not ok:
                report.failure = failure.format(got=answer.text)
                return False
        return True

    def race(self, report: ProbeReport) -> bool:
        """Step 5: `parallel` creates of one key at once; exactly one may win.

        A lost race can arrive as a dropped connection (TLS EOF) rather than a 412, and a
        win's answer can be lost the same way: so the key is read back, and its body names
        the writer that really won.
        """
        key = "race"
        gate = threading.Barrier(self.parallel)
        bodies = [f"racer {i} {secrets.token_hex(8)}".encode() for i in range(self.parallel)]

        def racer(i: int) -> _Answer:
            gate.wait()
            return self.put(key, bodies[i], {"IfNoneMatch": "*"}, racing=True)

        with ThreadPoolExecutor(self.parallel) as pool:
            answers = list(pool.map(racer, range(self.parallel)))
        stored = self.read(key)
        if stored is None and all(a.status is None for a in answers):
            # No racer got an answer and none wrote the key: the store was out of reach
            # (restarting, connections cut), which says nothing about conditional writes.
            raise self._error(answers[0].error or RuntimeError("no answer"), key)
        winners = [i for i, a in enumerate(answers) if _is_2xx(a)]
        lost = sum(1 for a in answers if _lost(a))
        dropped = [i for i, a in enumerate(answers) if a.status is None]
        holder = bodies.index(stored) if stored in bodies else None
        got = f"{len(winners)} × 2xx, {lost} × 412/409, {len(dropped)} × no answer"
        got += f"; the key holds racer {holder}'s body" if holder is not None else ""
        ok = holder is not None and (winners == [holder] or (not winners and holder in dropped))
        report.steps.append(ProbeStep("parallel creates",
                                      f"{self.parallel} × PUT {key} If-None-Match: * at once",
                                      got, ok, "exactly one 2xx"))  # fmt: skip
        if not ok:
            report.failure = (
                f"ignores If-None-Match under concurrency ({len(winners)} of {self.parallel} "
                "parallel creates of one key returned 2xx)"
            )
        return ok


def probe(store: S3Store, *, parallel: int = PARALLEL_CREATES) -> ProbeReport:
    """Run the probe's steps on a scratch prefix of `store`'s lake, then remove it.

    Raises the store's own errors (AccessDenied, StoreUnavailable, …) when a request
    cannot be judged; a wrong answer is a failed report, not an exception.
    """
    report = ProbeReport(store.settings.endpoint, store.bucket)
    started = time.monotonic()
    prober = _Prober(store, parallel)
    try:
        if prober.sequential(report):
            prober.race(report)
    finally:
        prober.remove()
    report.elapsed_s = round(time.monotonic() - started, 3)
    report.checked_at = datetime.now(UTC).isoformat(timespec="seconds")
    return report


def _cache_key(store: S3Store) -> str:
    return f"{store.settings.endpoint.rstrip('/')} {store.bucket}"


def _load(cache_file: Path) -> dict[str, Any]:
    try:
        data = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        return {}  # no cache (or a broken one): probe again
    return data if isinstance(data, dict) else {}


def cached_report(
    store: S3Store, cache_file: Path, *, now: datetime | None = None
) -> ProbeReport | None:
    """The remembered passing verdict for `store`'s endpoint + bucket, if younger than the TTL."""
    entry = _load(cache_file).get(_cache_key(store))
    if not isinstance(entry, dict):
        return None
    try:
        checked = datetime.fromisoformat(entry["checked_at"])
        steps = [ProbeStep(**step) for step in entry["steps"]]
    except (KeyError, TypeError, ValueError):
        return None
    if (now or datetime.now(UTC)) - checked > VERDICT_TTL:
        return None
    report = ProbeReport(entry.get("endpoint", ""), entry.get("bucket", ""), steps,
                         entry["checked_at"], float(entry.get("elapsed_s", 0.0)),
                         cached=True)  # fmt: skip
    return report if report.passed else None


def _remember(store: S3Store, report: ProbeReport, cache_file: Path) -> None:
    """Record a passing verdict. Runners on one machine start together, each probing its
    own endpoint: the read-modify-replace holds a lock on the cache's folder, so one
    runner's entry is never replaced by another's copy read before it was written."""
    entry = {k: v for k, v in report.as_json().items() if k != "cached"}
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        folder = os.open(cache_file.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)
            data = _load(cache_file)
            data[_cache_key(store)] = entry
            fd, tmp = tempfile.mkstemp(dir=cache_file.parent, prefix=f".{cache_file.name}.")
            with os.fdopen(fd, "w") as fh:
                json.dump(data, fh, indent=1)
            os.replace(tmp, cache_file)
        finally:
            os.close(folder)  # and with it the lock
    except OSError:
        pass  # an unwritable cache costs a probe next time, nothing else


def check_store(store: S3Store, cache_file: Path | None, *, recheck: bool = False) -> ProbeReport:
    """The verdict on `store`: the cached one if fresh (and not `recheck`), else a new probe
    (remembered when it passed). `cache_file` None: no cache, always probe."""
    if cache_file is not None and not recheck:
        cached = cached_report(store, cache_file)
        if cached is not None:
            return cached
    report = probe(store)
    log.info("store probe of s3://%s at %s: %s in %.2f s", store.bucket,
             store.settings.endpoint, report.failure or "passed", report.elapsed_s)  # fmt: skip
    if report.passed and cache_file is not None:
        _remember(store, report, cache_file)
    return report


def require_safe_store(
    store: ObjectStore, cache_file: Path | None, *, recheck: bool = False
) -> None:
    """Refuse (StoreRefused, exit 2) to write a lake on an S3 store that fails the probe.

    A local directory lake needs no probe: its create-only and compare-and-swap writes
    are fiolake's own (fiolake.store.LocalStore).
    """
    if not isinstance(store, S3Store):
        return
    report = check_store(store, cache_file, recheck=recheck)
    if not report.passed:
        raise report.refusal()
