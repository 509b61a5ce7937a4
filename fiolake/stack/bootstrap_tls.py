"""The bootstrap CA that secures OpenBao's own listener.

OpenBao's PKI engine issues MinIO's certificate, but OpenBao needs a certificate before
it can run that engine; a small self-signed CA made with `cryptography` breaks the cycle.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fiolake.stack.process import write_private

CA_DAYS = 3650
LEAF_DAYS = 365
RENEW_BEFORE = dt.timedelta(days=30)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _pem_cert(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _new_ca(now: dt.datetime) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fiolake bootstrap CA")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _new_leaf(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    hosts: list[str],
    now: dt.datetime,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=LEAF_DAYS))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _valid(cert_path: Path, now: dt.datetime, hosts: list[str] | None = None) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    except (FileNotFoundError, ValueError):
        return False
    if cert.not_valid_after_utc - RENEW_BEFORE < now:
        return False
    if hosts is None:
        return True
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    have = {str(v) for v in san.get_values_for_type(x509.IPAddress)}
    have |= set(san.get_values_for_type(x509.DNSName))
    return set(hosts) <= have


def ensure_bootstrap_tls(tls_dir: Path, hosts: list[str]) -> tuple[Path, Path, Path]:
    """CA cert, server cert and server key for OpenBao's listener (made or renewed as needed).

    Returns (ca_cert, server_cert, server_key) paths; keys are written 0600.
    """
    tls_dir.mkdir(parents=True, exist_ok=True)
    ca_crt, ca_key_path = tls_dir / "bootstrap-ca.crt", tls_dir / "bootstrap-ca.key"
    crt, key_path = tls_dir / "openbao.crt", tls_dir / "openbao.key"
    now = dt.datetime.now(dt.UTC)
    if _valid(ca_crt, now) and ca_key_path.exists():
        ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
        ca_cert = x509.load_pem_x509_certificate(ca_crt.read_bytes())
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    else:
        ca_key, ca_cert = _new_ca(now)
        write_private(ca_key_path, _pem_key(ca_key))
        ca_crt.write_text(_pem_cert(ca_cert))
        crt.unlink(missing_ok=True)
    if not (_valid(crt, now, hosts) and key_path.exists()):
        leaf_key, leaf = _new_leaf(ca_key, ca_cert, hosts, now)
        write_private(key_path, _pem_key(leaf_key))
        crt.write_text(_pem_cert(leaf))
    return ca_crt, crt, key_path


def cert_expires_within(cert_path: Path, delta: dt.timedelta) -> bool:
    """True if the certificate is missing, unreadable or expires within `delta`."""
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    except (FileNotFoundError, ValueError):
        return True
    return cert.not_valid_after_utc - delta < dt.datetime.now(dt.UTC)
