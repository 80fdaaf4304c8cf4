"""The key material a test control plane needs, made fresh for each one.

- a CA (``ca.crt``/``ca.key``) that signs the API server's serving certificate
  (``apiserver.crt``/``.key``, valid for 127.0.0.1, localhost and the in-cluster names), so
  clients verify TLS for real instead of switching verification off;
- a ServiceAccount signing key pair (``sa.key``/``sa.pub``): kube-apiserver signs the
  ServiceAccount tokens it issues (TokenRequest) with it and verifies them with it;
- a static admin token (``tokens.csv``, user ``admin`` in ``system:masters``) for the tests'
  own set-up and the controller manager.

Everything is written into one directory, which is deleted with the control plane.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

SERVING_NAMES = [
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
]


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    sa_private_key: Path
    sa_public_key: Path
    token_file: Path
    admin_token: str


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(
    subject: x509.Name, issuer: x509.Name, public_key: object, signer: ec.EllipticCurvePrivateKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)  # type: ignore[arg-type]
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
    )


def make_pki(directory: Path) -> Pki:
    """Write a fresh CA, serving certificate, ServiceAccount key pair and admin token."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("starburst-test-ca")
    ca = (
        _certificate(ca_name, ca_name, ca_key.public_key(), ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    serving_key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in SERVING_NAMES]
    sans += [
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("10.0.0.1")),
    ]
    serving = (
        _certificate(_name("kube-apiserver"), ca_name, serving_key.public_key(), ca_key)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(
        ca_cert=directory / "ca.crt",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        sa_private_key=directory / "sa.key",
        sa_public_key=directory / "sa.pub",
        token_file=directory / "tokens.csv",
        admin_token=secrets.token_hex(24),
    )
    pki.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    pki.serving_cert.write_bytes(serving.public_bytes(serialization.Encoding.PEM))
    _write_key(pki.serving_key, serving_key)
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(pki.sa_private_key, sa_key)
    pki.sa_public_key.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    pki.token_file.write_text(f'{pki.admin_token},admin,admin-uid,"system:masters"\n')
    pki.token_file.chmod(0o600)
    return pki
