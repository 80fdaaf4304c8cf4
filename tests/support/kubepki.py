"""The key material a test control plane needs, made fresh for each one.

- a CA (``ca.crt``/``ca.key``) that signs the API server's serving certificate
  (``apiserver.crt``/``.key``, valid for 127.0.0.1, localhost and the in-cluster names), so
  clients verify TLS for real instead of switching verification off;
- a ServiceAccount signing key pair (``sa.key``/``sa.pub``): kube-apiserver signs the
  ServiceAccount tokens it issues (TokenRequest) with it and verifies them with it;
- a static admin token (``tokens.csv``, user ``admin`` in ``system:masters``) for the tests'
  own set-up and the controller manager, and one static token for each of ``STATIC_USERS``
  (people with groups and no RBAC: identities for Starburst's ``kubernetes_auth`` tests);
- the CA's key (``ca.key``) stays, so ``sign`` can issue more certificates signed by the CA:
  a real kubelet's serving and client certificates, the API server's client certificate for
  kubelets (``tests.support.realnode``).

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


#: static users of the token file, and their groups (``Pki.user_tokens`` holds their tokens)
STATIC_USERS: dict[str, tuple[str, ...]] = {
    "alice@example.org": ("ml-team",),
    "boss@example.org": ("starburst-admins", "ml-team"),
    "eve@example.org": ("interns",),
}


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    sa_private_key: Path
    sa_public_key: Path
    token_file: Path
    admin_token: str
    #: a static token per user of ``STATIC_USERS``
    user_tokens: dict[str, str]


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


def make_pki(directory: Path, extra_ips: tuple[str, ...] = ()) -> Pki:
    """Write a fresh CA, serving certificate (also valid for ``extra_ips``), ServiceAccount key
    pair and admin token."""
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
        *(x509.IPAddress(ipaddress.ip_address(ip)) for ip in extra_ips),
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
        ca_key=directory / "ca.key",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        sa_private_key=directory / "sa.key",
        sa_public_key=directory / "sa.pub",
        token_file=directory / "tokens.csv",
        admin_token=secrets.token_hex(24),
        user_tokens={user: secrets.token_hex(24) for user in STATIC_USERS},
    )
    pki.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    pki.serving_cert.write_bytes(serving.public_bytes(serialization.Encoding.PEM))
    _write_key(pki.serving_key, serving_key)
    _write_key(pki.ca_key, ca_key)
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(pki.sa_private_key, sa_key)
    pki.sa_public_key.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    lines = [f'{pki.admin_token},admin,admin-uid,"system:masters"']
    lines += [
        f'{pki.user_tokens[user]},{user},{user}-uid,"{",".join(groups)}"'
        for user, groups in STATIC_USERS.items()
    ]
    pki.token_file.write_text("\n".join(lines) + "\n")
    pki.token_file.chmod(0o600)
    return pki


def sign(
    pki: Pki,
    path: Path,
    *,
    common_name: str,
    organizations: tuple[str, ...] = (),
    ips: tuple[str, ...] = (),
    server: bool = False,
) -> tuple[Path, Path]:
    """Issue a certificate signed by the test CA: a client certificate (the user
    ``common_name`` in the groups ``organizations``), or with ``server`` a serving certificate
    valid for ``common_name`` and ``ips``. Written as ``<path>.crt`` and ``<path>.key``."""
    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    issuer = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes()).subject
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        + [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    )
    usage = x509.oid.ExtendedKeyUsageOID.SERVER_AUTH if server else None
    builder = _certificate(subject, issuer, key.public_key(), ca_key).add_extension(
        x509.ExtendedKeyUsage([usage or x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]),
        critical=False,
    )
    if server:
        names: list[x509.GeneralName] = [x509.DNSName(common_name)]
        names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert, key_path = path.with_suffix(".crt"), path.with_suffix(".key")
    cert.write_bytes(builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
    _write_key(key_path, key)
    return cert, key_path
