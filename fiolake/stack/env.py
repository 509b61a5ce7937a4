"""What a running stack offers its users: endpoints, CA bundle, per-role credentials."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fiolake.errors import UsageProblem
from fiolake.s3client import S3Settings


@dataclass(frozen=True)
class RoleCredentials:
    """Object-store keys and an OpenBao token for one role."""

    access_key: str
    secret_key: str
    vault_token: str | None


@dataclass(frozen=True)
class StackEnv:
    """A running local stack; `environ(role)` is what `fiolake stack env` prints."""

    state_dir: Path
    endpoint: str
    ca_bundle: Path
    bucket: str
    lake: str
    vault_addr: str
    vault_cacert: Path | None
    root_token: str
    transit_key: str
    roles: dict[str, RoleCredentials]

    def role(self, role: str) -> RoleCredentials:
        """Credentials of `role`; UsageProblem naming the valid roles otherwise."""
        try:
            return self.roles[role]
        except KeyError:
            raise UsageProblem(
                f"unknown role {role!r}: use one of {', '.join(sorted(self.roles))}"
            ) from None

    def environ(self, role: str = "admin") -> dict[str, str]:
        """Environment variables that point fiolake, boto3 and the bao CLI at this stack."""
        creds = self.role(role)
        env = {
            "FIOLAKE_LAKE": self.lake,
            "FIOLAKE_S3_ENDPOINT": self.endpoint,
            "FIOLAKE_CA_BUNDLE": str(self.ca_bundle),
            "AWS_ACCESS_KEY_ID": creds.access_key,
            "AWS_SECRET_ACCESS_KEY": creds.secret_key,
            "VAULT_ADDR": self.vault_addr,
            "FIOLAKE_TRANSIT_KEY": self.transit_key,
        }
        if self.vault_cacert is not None:
            env["VAULT_CACERT"] = str(self.vault_cacert)
        if creds.vault_token is not None:
            env["VAULT_TOKEN"] = creds.vault_token
        if role in ("admin", "publisher"):
            env["FIOLAKE_SIGNER"] = "vault"  # `fiolake publish` signs with transit
        return env

    def s3_settings(self, role: str = "admin") -> S3Settings:
        """S3 settings (endpoint, CA bundle, keys) for `role`."""
        creds = self.role(role)
        return S3Settings(
            endpoint=self.endpoint,
            ca_bundle=str(self.ca_bundle),
            access_key=creds.access_key,
            secret_key=creds.secret_key,
        )
