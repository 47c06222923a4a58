"""Test signing keys, JWTs and a JWKS server for the auth suite, built with python3-cryptography
(Debian), independent of the backend's own code: the keys are generated here at test time, the
tokens are signed here, and the JWKS is served over HTTPS with a test CA made here (or over plain
HTTP on loopback). The backend is told to trust the test CA through SSL_CERT_FILE."""
import base64
import datetime
import http.server
import ipaddress
import json
import os
import ssl
import tempfile
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _int_bytes(n, length=None):
    length = length or (n.bit_length() + 7) // 8
    return n.to_bytes(length, "big")


class SigningKey:
    """One private key and the JWS algorithm it signs with (RS256/384/512, ES256/384, EdDSA)."""

    def __init__(self, alg, kid=None):
        self.alg = alg
        self.kid = kid
        if alg.startswith("RS"):
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        elif alg == "ES256":
            self.private = ec.generate_private_key(ec.SECP256R1())
        elif alg == "ES384":
            self.private = ec.generate_private_key(ec.SECP384R1())
        elif alg == "EdDSA":
            self.private = ed25519.Ed25519PrivateKey.generate()
        else:
            raise ValueError(alg)

    def public_pem(self):
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()

    def jwk(self, **extra):
        pub = self.private.public_key()
        out = {"alg": self.alg}
        if self.kid is not None:
            out["kid"] = self.kid
        if self.alg.startswith("RS"):
            nums = pub.public_numbers()
            out.update(kty="RSA", n=b64url(_int_bytes(nums.n)), e=b64url(_int_bytes(nums.e)))
        elif self.alg.startswith("ES"):
            nums = pub.public_numbers()
            size = 32 if self.alg == "ES256" else 48
            out.update(kty="EC", crv="P-256" if size == 32 else "P-384",
                       x=b64url(_int_bytes(nums.x, size)), y=b64url(_int_bytes(nums.y, size)))
        else:
            raw = pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            out.update(kty="OKP", crv="Ed25519", x=b64url(raw))
        out.update(extra)
        return out

    def sign(self, data):
        if self.alg.startswith("RS"):
            digest = {"RS256": hashes.SHA256(), "RS384": hashes.SHA384(),
                      "RS512": hashes.SHA512()}[self.alg]
            return self.private.sign(data, padding.PKCS1v15(), digest)
        if self.alg.startswith("ES"):
            size = 32 if self.alg == "ES256" else 48
            digest = hashes.SHA256() if size == 32 else hashes.SHA384()
            r, s = decode_dss_signature(self.private.sign(data, ec.ECDSA(digest)))
            return _int_bytes(r, size) + _int_bytes(s, size)
        return self.private.sign(data)

    def token(self, claims, header=None, with_kid=True):
        head = {"alg": self.alg, "typ": "JWT"}
        if with_kid and self.kid is not None:
            head["kid"] = self.kid
        head.update(header or {})
        signing_input = (b64url(json.dumps(head).encode()) + "." +
                         b64url(json.dumps(claims).encode()))
        return signing_input + "." + b64url(self.sign(signing_input.encode()))


class TestCa:
    """A CA and a server certificate for 127.0.0.1 it signed, as PEM files in a temp dir."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="xb-ca-")
        now = datetime.datetime.now(datetime.timezone.utc)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "xb test CA")])
        ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
                   .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(False, False, False, False, False, True, True,
                                                False, False), critical=True)
                   .sign(ca_key, hashes.SHA256()))
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
                .issuer_name(ca_name).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName(
                    [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        self.ca_file = os.path.join(self.dir.name, "ca.pem")
        self.cert_file = os.path.join(self.dir.name, "server.pem")
        self.key_file = os.path.join(self.dir.name, "server.key")
        with open(self.ca_file, "wb") as f:
            f.write(ca_cert.public_bytes(serialization.Encoding.PEM))
        with open(self.cert_file, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        with open(self.key_file, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))

    def env(self):
        """The backend's environment, trusting this CA (OpenSSL's default verify paths)."""
        env = dict(os.environ)
        env["SSL_CERT_FILE"] = self.ca_file
        return env

    def cleanup(self):
        self.dir.cleanup()


class JwksServer:
    """Serves one JWKS document on 127.0.0.1 (HTTPS with `ca`, or plain HTTP). `status` other
    than 200 makes every answer fail; `keys` may be replaced at any time. Counts requests.
    `close()` stops listening (an outage: connections are refused); `listen()` serves again on
    the same port."""

    def __init__(self, keys, ca=None):
        self.lock = threading.Lock()
        self.keys = list(keys)
        self.status = 200
        self.requests = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with outer.lock:
                    outer.requests += 1
                    status = outer.status
                    body = json.dumps({"keys": [k.jwk() for k in outer.keys]}).encode()
                if status != 200:
                    body = b"unavailable"
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.handler = Handler
        self.ca = ca
        self.tls = ca is not None
        self.port = 0
        self.listen()

    def listen(self):
        """Serves on `port` (a free one the first time)."""
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), self.handler)
        if self.ca is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self.ca.cert_file, self.ca.key_file)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return "%s://127.0.0.1:%d/.well-known/jwks.json" % ("https" if self.tls else "http",
                                                            self.port)

    def set(self, status=None, keys=None):
        with self.lock:
            if status is not None:
                self.status = status
            if keys is not None:
                self.keys = list(keys)

    def request_count(self):
        with self.lock:
            return self.requests

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
