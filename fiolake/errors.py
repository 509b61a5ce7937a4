"""Exceptions shared by every fiolake component; the CLI maps them to exit codes."""

from __future__ import annotations


class FiolakeError(Exception):
    """A failure the user can act on; the message names the problem and the fix."""

    exit_code = 1


class UsageProblem(FiolakeError):
    """Bad input to a command (exit 2)."""

    exit_code = 2


class ConfigError(UsageProblem):
    """The environment names something fiolake cannot use — a plain-text endpoint, a CA
    file that is not there (exit 2: fixed by the configuration, not by retrying)."""


class DeviceRefused(UsageProblem):
    """`--device` names a block device fiolake must not write over (or no block device)."""


class PolicyError(FiolakeError):
    """A job file broke the job-file policy; `violations` lists every problem found."""

    def __init__(self, violations: list[str]):
        self.violations = list(violations)
        super().__init__("job file refused:\n  " + "\n  ".join(self.violations))


class FioError(FiolakeError):
    """fio is missing, failed to start, or produced no usable output."""


class LakeError(FiolakeError):
    """The lake is missing, empty, or a query against it failed."""


class CompactionBusy(LakeError):
    """Another compaction holds the lake's compaction lock (exit 1; `--wait` waits)."""


class StoreError(FiolakeError):
    """An object-store operation failed; the subclasses say how (decided from the S3 error
    code or the transport failure, never from message text). A plain StoreError is a
    request the store refused for another reason (bad configuration, TLS, bad argument)."""


class AccessDenied(StoreError):
    """The credentials may not do this (403, bad or expired keys): retrying cannot help."""


class StoreUnavailable(StoreError):
    """The store could not be reached or answered 5xx / slow down: worth retrying."""


class StoreFull(StoreUnavailable):
    """The store has no room for the object (S3 507 XMinioStorageFull, a local file system
    with no space left). Retrying helps once someone frees space, so it is a
    StoreUnavailable: runners keep their results spooled and retry; the CLI says what to
    free instead of "try again in a minute"."""


class PreconditionFailed(StoreError):
    """A conditional write lost: the key exists (If-None-Match) or changed (If-Match)."""


class NotFound(StoreError):
    """The object does not exist."""


class ManifestError(FiolakeError):
    """A manifest is unsigned, tampered, expired, misplaced or signed by an unknown key."""
