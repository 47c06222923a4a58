"""Loopback fakes of the three push providers (PUSH.md section 9), for the push suites.

Everything here is built from the spec with python3-cryptography and python3-h2 (Debian), never
with the backend's code: each fake verifies what it receives on its own (JWT signatures, webhook
HMACs, exact bodies and headers) and records every request with the list of problems it found.
A suite asserts `fake.problems() == []` besides the outcomes it drives.

- TestCa: a CA made at test time; issues server certificates for DNS names and IP addresses. The
  backend trusts it through SSL_CERT_FILE (OpenSSL's default verify paths).
- ApnsFake: HTTP/2 over TLS (ALPN h2 only) for api.sandbox.push.apple.com and api.push.apple.com.
- FcmFake: fcm.googleapis.com (send) and oauth2.googleapis.com (token), HTTP/2 or HTTP/1.1.
- WebhookReceiver: https://127.0.0.1:<port>/<path>, HTTP/2 or HTTP/1.1.

The test build of the backend (xmtp-backend-testing) connects to a provider host at the address
that env XB_TEST_PROVIDER_PINS names ("host=127.0.0.1:port,..."; `pins()` of a fake); the URL, SNI,
:authority and certificate name check stay the spec's host.

Fakes bind 127.0.0.1:0, serve from daemon threads, and stop on close() (context manager) or by
themselves after `lifetime` seconds.
"""
import base64
import collections
import datetime
import hashlib
import hmac
import ipaddress
import json
import os
import re
import socket
import ssl
import tempfile
import threading
import time
import urllib.parse

import h2.config
import h2.connection
import h2.events
import h2.exceptions
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.x509.oid import NameOID

APNS_HOSTS = ("api.sandbox.push.apple.com", "api.push.apple.com")
FCM_HOST = "fcm.googleapis.com"
OAUTH_HOST = "oauth2.googleapis.com"
TOKEN_URI = "https://oauth2.googleapis.com/token"
FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
FCM_ERROR_TYPE = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
UUID4_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
DECIMAL_RE = re.compile(r"^(0|[1-9][0-9]*)$")
DEFAULT_LIFETIME = 600


# ------------------------------------------------------------------------------------------------
# Encodings checked independently of the backend


def b64url_decode(text):
    """base64url without padding (RFC 7515 section 2); raises ValueError otherwise."""
    if "=" in text or not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise ValueError("not unpadded base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def decode_topic(text, problems):
    """The topic of a push body: standard base64 with padding of a group-message (17 bytes,
    kind 0) or welcome (33 bytes, kind 1) topic (PUSH.md 9.1). None (and a problem) otherwise."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (ValueError, TypeError):
        problems.append("topic is not standard base64")
        return None
    if base64.b64encode(raw).decode() != text:
        problems.append("topic is not canonical padded base64")
    if not ((len(raw) == 17 and raw[0] == 0) or (len(raw) == 33 and raw[0] == 1)):
        problems.append("topic is not a group-message or welcome topic")
    return raw


def decode_sequence_id(value, problems):
    if not isinstance(value, str) or not DECIMAL_RE.match(value):
        problems.append("sequence_id is not a decimal string")
        return None
    return int(value)


def split_jwt(token, problems):
    """(header, claims, signing_input bytes, signature bytes) or None (and a problem)."""
    parts = token.split(".")
    if len(parts) != 3:
        problems.append("jwt does not have three parts")
        return None
    try:
        header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
        signature = b64url_decode(parts[2])
    except ValueError:
        problems.append("jwt part is not unpadded base64url JSON")
        return None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        problems.append("jwt header or claims is not an object")
        return None
    return header, claims, (parts[0] + "." + parts[1]).encode(), signature


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def media_type(headers):
    return headers.get("content-type", "").split(";")[0].strip().lower()


# ------------------------------------------------------------------------------------------------
# Test CA


class TestCa:
    """A CA made here (EC P-256) and the server certificates it issues, as PEM files in a temp
    dir. `env()` is a backend environment that trusts it."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="xb-push-ca-")
        self._now = datetime.datetime.now(datetime.timezone.utc)
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "xb push test CA")])
        cert = (self._builder(self._name, self._key.public_key())
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(False, False, False, False, False, True, True,
                                             False, False), critical=True)
                .sign(self._key, hashes.SHA256()))
        self.ca_file = self._write("ca.pem", cert.public_bytes(serialization.Encoding.PEM))
        self._serial = 0

    def _builder(self, subject, public_key):
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(self._name)
                .public_key(public_key).serial_number(x509.random_serial_number())
                .not_valid_before(self._now - datetime.timedelta(minutes=5))
                .not_valid_after(self._now + datetime.timedelta(days=1)))

    def _write(self, name, data):
        path = os.path.join(self.dir.name, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def issue(self, dns_names=(), ips=()):
        """(cert_file, key_file) of a server certificate for the names and IP addresses."""
        key = ec.generate_private_key(ec.SECP256R1())
        sans = [x509.DNSName(n) for n in dns_names]
        sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in ips]
        common = (list(dns_names) + list(ips))[0]
        cert = (self._builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)]),
                              key.public_key())
                .add_extension(x509.SubjectAlternativeName(sans), critical=False)
                .sign(self._key, hashes.SHA256()))
        self._serial += 1
        cert_file = self._write("server%d.pem" % self._serial,
                                cert.public_bytes(serialization.Encoding.PEM))
        key_file = self._write("server%d.key" % self._serial, key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        return cert_file, key_file

    def client_context(self, alpn=("h2", "http/1.1")):
        """A client context trusting only this CA (the fakes' self-tests)."""
        context = ssl.create_default_context(cafile=self.ca_file)
        context.set_alpn_protocols(list(alpn))
        return context

    def env(self, pins=(), extra=None):
        """The backend's environment: trusts this CA, pins the provider hosts to the fakes."""
        env = dict(os.environ)
        env["SSL_CERT_FILE"] = self.ca_file
        pins = [p for p in pins if p]
        if pins:
            env["XB_TEST_PROVIDER_PINS"] = ",".join(pins)
        env.update(extra or {})
        return env

    def cleanup(self):
        self.dir.cleanup()


# ------------------------------------------------------------------------------------------------
# A TLS HTTP server speaking HTTP/2 (h2) and HTTP/1.1, chosen by ALPN


class Request:
    """One request as received, with what the fake found wrong in it."""

    def __init__(self, protocol, method, path, authority, headers, body, sni):
        self.protocol = protocol  # "h2" or "http/1.1"
        self.method = method
        self.path = path
        self.authority = authority
        self.headers = headers  # {lower-case name: value}; a repeated name keeps the last
        self.header_list = []  # [(name, value)] in order, pseudo-headers excluded
        self.body = body
        self.sni = sni
        self.time = time.monotonic()
        self.problems = []
        self.info = {}  # what the fake decoded (token, topic, sequence_id, ...)

    def __repr__(self):
        return "Request(%s %s %s problems=%r info=%r)" % (self.protocol, self.method, self.path,
                                                          self.problems, self.info)


class Answer:
    def __init__(self, status=200, body=b"", headers=(), delay=0.0):
        self.status = status
        self.body = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.headers = list(headers)
        self.delay = delay


def _remember_sni(sock, name, context):
    sock.xb_sni = name  # the SSLSocket being handshaken: the SNI this connection asked for


class LoopbackHttpServer:
    """Serves `handler(Request) -> Answer` on 127.0.0.1:0: the listener, the accept loop and the
    handler call. A subclass says how one accepted connection is served (`_serve`)."""

    def __init__(self, handler, lifetime=DEFAULT_LIFETIME):
        self.handler = handler
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.stopping = threading.Event()
        self.deadline = time.monotonic() + lifetime
        self.connections = 0
        self.lock = threading.Lock()

    def start(self):
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def close(self):
        self.stopping.set()

    def _stopped(self):
        return self.stopping.is_set() or time.monotonic() > self.deadline

    def _accept_loop(self):
        try:
            while not self._stopped():
                try:
                    sock, _ = self.listener.accept()
                except socket.timeout:
                    continue
                except OSError:
                    break
                with self.lock:
                    self.connections += 1
                threading.Thread(target=self._serve, args=(sock,), daemon=True).start()
        finally:
            self.listener.close()

    def _serve(self, sock):
        raise NotImplementedError

    def answer(self, request):
        try:
            return self.handler(request)
        except Exception as e:  # a bug in a fake: record it, answer 500
            request.problems.append("fake raised %r" % (e,))
            return Answer(500, b"fake error")


class TlsHttpServer(LoopbackHttpServer):
    """LoopbackHttpServer over TLS (HTTP/2 or HTTP/1.1 by ALPN). An answer's delay runs in its
    own thread, so slow answers on one HTTP/2 connection overlap."""

    def __init__(self, ca, handler, dns_names=(), ips=(), alpn=("h2", "http/1.1"),
                 lifetime=DEFAULT_LIFETIME):
        super().__init__(handler, lifetime)
        cert_file, key_file = ca.issue(dns_names, ips)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert_file, key_file)
        self.context.set_alpn_protocols(list(alpn))
        self.context.sni_callback = _remember_sni
        self.alpn = tuple(alpn)
        self.start()

    def _serve(self, raw):
        try:
            raw.settimeout(10)
            sock = self.context.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        try:
            sock.settimeout(0.05)
            server_name = getattr(sock, "xb_sni", None)
            if sock.selected_alpn_protocol() == "h2":
                H2Connection(self, sock, server_name).run()
            elif "http/1.1" in self.alpn:
                Http1Connection(self, sock, server_name).run()
        except (OSError, ssl.SSLError, h2.exceptions.ProtocolError):
            pass
        finally:
            try:
                sock.close()
            except OSError:
                pass


class H2Connection:
    """One server-side HTTP/2 connection; every socket operation on this thread."""

    def __init__(self, server, sock, sni):
        self.server, self.sock, self.sni = server, sock, sni
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.streams = {}  # stream id -> [headers, body bytearray]
        self.done = collections.deque()  # (stream id, Answer) ready to send
        self.pending = 0

    def run(self):
        self.conn.initiate_connection()
        self.flush()
        while not self.server._stopped():
            self.send_done()
            try:
                data = self.sock.recv(65536)
            except (socket.timeout, ssl.SSLWantReadError):
                continue
            if not data:
                break
            for event in self.conn.receive_data(data):
                self.on_event(event)
            self.flush()
        # Let answers already computing go out before the connection closes.
        deadline = time.monotonic() + 1
        while self.pending and time.monotonic() < deadline:
            self.send_done()
            time.sleep(0.01)

    def flush(self):
        out = self.conn.data_to_send()
        if out:
            self.sock.settimeout(10)
            self.sock.sendall(out)
            self.sock.settimeout(0.05)

    def on_event(self, event):
        if isinstance(event, h2.events.RequestReceived):
            self.streams[event.stream_id] = [event.headers, bytearray()]
            if event.stream_ended:
                self.on_request(event.stream_id)
        elif isinstance(event, h2.events.DataReceived):
            if event.stream_id in self.streams:
                self.streams[event.stream_id][1] += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            self.on_request(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            self.streams.pop(event.stream_id, None)

    def on_request(self, stream_id):
        entry = self.streams.pop(stream_id, None)
        if entry is None:
            return
        raw_headers, body = entry
        pseudo = {k: v for k, v in raw_headers if k.startswith(":")}
        header_list = [(k.lower(), v) for k, v in raw_headers if not k.startswith(":")]
        request = Request("h2", pseudo.get(":method"), pseudo.get(":path"),
                          pseudo.get(":authority"), dict(header_list), bytes(body), self.sni)
        request.header_list = header_list
        self.pending += 1
        threading.Thread(target=self.compute, args=(stream_id, request), daemon=True).start()

    def compute(self, stream_id, request):
        answer = self.server.answer(request)
        if answer.delay:
            time.sleep(answer.delay)
        self.done.append((stream_id, answer))

    def send_done(self):
        while self.done:
            stream_id, answer = self.done.popleft()
            self.pending -= 1
            headers = [(":status", str(answer.status)),
                       ("content-length", str(len(answer.body)))] + answer.headers
            try:
                self.conn.send_headers(stream_id, headers, end_stream=not answer.body)
                if answer.body:
                    self.conn.send_data(stream_id, answer.body, end_stream=True)
            except h2.exceptions.H2Error:
                continue  # the client reset the stream meanwhile
            self.flush()


class Http1Connection:
    """One server-side HTTP/1.1 connection with keep-alive (content-length bodies only)."""

    def __init__(self, server, sock, sni):
        self.server, self.sock, self.sni = server, sock, sni
        self.buffer = b""

    def read_more(self):
        while not self.server._stopped():
            try:
                data = self.sock.recv(65536)
            except (socket.timeout, ssl.SSLWantReadError):
                continue
            if not data:
                return False
            self.buffer += data
            return True
        return False

    def run(self):
        while True:
            while b"\r\n\r\n" not in self.buffer:
                if not self.read_more():
                    return
            head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            header_list = []
            for line in lines[1:]:
                name, value = line.split(":", 1)
                header_list.append((name.strip().lower(), value.strip()))
            headers = dict(header_list)
            length = int(headers.get("content-length", "0"))
            while len(self.buffer) < length:
                if not self.read_more():
                    return
            body, self.buffer = self.buffer[:length], self.buffer[length:]
            request = Request("http/1.1", method, target, headers.get("host"), headers, body,
                              self.sni)
            request.header_list = header_list
            answer = self.server.answer(request)
            if answer.delay:
                time.sleep(answer.delay)
            out = "HTTP/1.1 %d X\r\ncontent-length: %d\r\n" % (answer.status, len(answer.body))
            out += "".join("%s: %s\r\n" % h for h in answer.headers) + "\r\n"
            self.sock.settimeout(10)
            self.sock.sendall(out.encode("latin-1") + answer.body)
            self.sock.settimeout(0.05)
            if headers.get("connection", "").lower() == "close":
                return


class RecordingFake:
    """What every fake shares: the server, the record of requests, waiting on it."""

    def __init__(self):
        self.requests = []
        self.cond = threading.Condition()
        self.server = None

    def record(self, request):
        with self.cond:
            self.requests.append(request)
            self.cond.notify_all()

    def snapshot(self, predicate=None):
        with self.cond:
            return [r for r in self.requests if predicate is None or predicate(r)]

    def wait_for(self, predicate, count, timeout):
        """The requests matching `predicate` once there are at least `count` of them; raises
        AssertionError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                matching = [r for r in self.requests if predicate(r)]
                if len(matching) >= count:
                    return matching
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("timed out waiting for %d requests (have %d): %r" %
                                         (count, len(matching), matching[-3:]))
                self.cond.wait(left)

    def problems(self):
        with self.cond:
            return [(r.path, p) for r in self.requests for p in r.problems]

    @property
    def port(self):
        return self.server.port

    def close(self):
        self.server.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class AnswerScript:
    """Per-key queues of scripted answers; a key with an empty queue gets the default."""

    def __init__(self):
        self.lock = threading.Lock()
        self.queues = {}
        self.delays = {}
        self.default_delay = 0.0

    def add(self, key, *answers):
        with self.lock:
            self.queues.setdefault(key, collections.deque()).extend(answers)

    def next(self, key):
        with self.lock:
            q = self.queues.get(key)
            return q.popleft() if q else None

    def delay(self, key):
        with self.lock:
            return self.delays.get(key, self.default_delay)


# ------------------------------------------------------------------------------------------------
# APNs (PUSH.md 9.2)


class ApnsKey:
    """A PKCS#8 PEM EC P-256 key as `push.apns.key` wants it, with its public key."""

    def __init__(self):
        self.private = ec.generate_private_key(ec.SECP256R1())
        self.pem = self.private.private_bytes(serialization.Encoding.PEM,
                                              serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()).decode()
        self.public = self.private.public_key()


class ApnsFake(RecordingFake):
    """APNs over HTTP/2 for both Apple hosts. `script(token, (status, reason), ...)` queues the
    answers for a device token (default 200). A provider token that was answered
    ExpiredProviderToken stays expired for that device token (only, so that concurrent requests
    of other tokens keep their scripts): a resend with the same JWT gets the same answer."""

    def __init__(self, ca, key, key_id="KEYID12345", team_id="TEAMID1234", bundle_id="org.xb.app",
                 environment="sandbox", lifetime=DEFAULT_LIFETIME):
        super().__init__()
        self.key, self.key_id, self.team_id, self.bundle_id = key, key_id, team_id, bundle_id
        self.host = APNS_HOSTS[0] if environment == "sandbox" else APNS_HOSTS[1]
        self.answers = AnswerScript()
        self.expired_jwts = set()  # (device token, JWT)
        self.server = TlsHttpServer(ca, self.handle, dns_names=APNS_HOSTS, alpn=("h2",),
                                    lifetime=lifetime)

    def pins(self):
        return ",".join("%s=127.0.0.1:%d" % (h, self.port) for h in APNS_HOSTS)

    def config(self, environment="sandbox", key_value="env:XB_TEST_APNS_KEY"):
        return ('[push.apns]\nkey = "%s"\nkey_id = "%s"\nteam_id = "%s"\nbundle_id = "%s"\n'
                'environment = "%s"\n' % (key_value, self.key_id, self.team_id, self.bundle_id,
                                          environment))

    def env(self):
        return {"XB_TEST_APNS_KEY": self.key.pem}

    def script(self, token, *answers):
        self.answers.add(token, *answers)

    def for_token(self, token):
        return self.snapshot(lambda r: r.info.get("token") == token)

    def handle(self, request):
        p = request.problems
        m = re.fullmatch(r"/3/device/([^/?]*)", request.path or "")
        token = m.group(1) if m else None
        request.info["token"] = token
        if request.method != "POST":
            p.append("method is not POST")
        if token is None or not re.fullmatch(r"[0-9A-Fa-f]+", token):
            p.append("path is not /3/device/<hex token>")
        if request.authority != self.host or request.sni != self.host:
            p.append("authority or SNI is not " + self.host)
        jwt = self.check_authorization(request)
        self.check_headers_and_body(request)
        self.record(request)
        if jwt is None:
            return Answer(403, {"reason": "InvalidProviderToken"})
        if (token, jwt) in self.expired_jwts:
            return Answer(403, {"reason": "ExpiredProviderToken"})
        if p:
            return Answer(400, {"reason": "BadRequestFromFake"})
        scripted = self.answers.next(token) or (200, None)
        status, reason = scripted
        if reason == "ExpiredProviderToken":
            self.expired_jwts.add((token, jwt))
        body = b"" if reason is None else json.dumps({"reason": reason}).encode()
        return Answer(status, body, delay=self.answers.delay(token))

    def check_authorization(self, request):
        """The JWT string if it verifies (9.2 provider token), else None (and problems)."""
        p = request.problems
        value = request.headers.get("authorization", "")
        if value[:7].lower() != "bearer ":  # RFC 7235: the scheme is case-insensitive
            p.append("authorization is not 'bearer <token>'")
            return None
        jwt = value[7:]
        request.info["jwt"] = jwt
        parts = split_jwt(jwt, p)
        if parts is None:
            return None
        header, claims, signing_input, signature = parts
        if header.get("alg") != "ES256" or header.get("kid") != self.key_id or \
                not set(header) <= {"alg", "kid", "typ"} or header.get("typ", "JWT") != "JWT":
            p.append("jwt header is not {alg: ES256, kid: key_id}")
        if set(claims) != {"iss", "iat"} or claims.get("iss") != self.team_id:
            p.append("jwt claims are not exactly {iss: team_id, iat}")
        iat = claims.get("iat")
        if not is_int(iat) or not time.time() - 3600 <= iat <= time.time() + 60:
            p.append("jwt iat is not a recent integer")
        request.info["iat"] = iat
        if len(signature) != 64:
            p.append("jwt signature is not raw R||S")
            return None
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"),
                                   int.from_bytes(signature[32:], "big"))
        try:
            self.key.public.verify(der, signing_input, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            p.append("jwt signature does not verify")
            return None
        return jwt if not p else None

    def check_headers_and_body(self, request):
        p, h = request.problems, request.headers
        if h.get("apns-topic") != self.bundle_id:
            p.append("apns-topic is not the bundle id")
        if h.get("apns-push-type") != "background":
            p.append("apns-push-type is not background")
        if h.get("apns-priority") != "5":
            p.append("apns-priority is not 5")
        if media_type(h) != "application/json":
            p.append("content-type is not application/json")
        try:
            body = json.loads(request.body)
        except ValueError:
            p.append("body is not JSON")
            return
        if not isinstance(body, dict) or set(body) != {"aps", "topic", "sequence_id"} or \
                body.get("aps") != {"content-available": 1} or \
                not is_int(body["aps"]["content-available"]):
            p.append("body is not {aps: {content-available: 1}, topic, sequence_id}")
            return
        request.info["topic"] = decode_topic(body["topic"], p)
        request.info["sequence_id"] = decode_sequence_id(body["sequence_id"], p)
        collapse = h.get("apns-collapse-id")
        if collapse != body["topic"] or len(collapse.encode()) > 64:
            p.append("apns-collapse-id is not the base64 topic")


# ------------------------------------------------------------------------------------------------
# FCM HTTP v1 and its OAuth2 token endpoint (PUSH.md 9.3)


class FcmAnswer:
    """A scripted send answer: status, optional Retry-After, FcmError code, QuotaFailure detail,
    or a raw body."""

    def __init__(self, status=200, retry_after=None, error_code=None, quota_failure=False,
                 body=None, delay=0.0):
        self.status, self.retry_after, self.error_code = status, retry_after, error_code
        self.quota_failure, self.body, self.delay = quota_failure, body, delay

    def answer(self, project_id):
        headers = [("content-type", "application/json")]
        if self.retry_after is not None:
            headers.append(("retry-after", str(self.retry_after)))
        body = self.body
        if body is None and self.status == 200:
            body = {"name": "projects/%s/messages/0:%d" % (project_id, time.time_ns())}
        elif body is None:
            details = []
            if self.error_code:
                details.append({"@type": FCM_ERROR_TYPE, "errorCode": self.error_code})
            if self.quota_failure:
                details.append({"@type": "type.googleapis.com/google.rpc.QuotaFailure"})
            body = {"error": {"code": self.status, "message": "fake", "status": "FAKE",
                              "details": details}}
        return Answer(self.status, body, headers, delay=self.delay)


class FcmFake(RecordingFake):
    """FCM send + OAuth2 token endpoint on one port (both host names in its certificate).
    `expires_in` is what each access token answer says; the fake refuses an access token past
    that age. `script(registration_token, FcmAnswer(...), ...)` queues send answers."""

    def __init__(self, ca, project_id="xb-test-project", expires_in=3600,
                 lifetime=DEFAULT_LIFETIME):
        super().__init__()
        self.project_id = project_id
        self.client_email = "push@%s.iam.gserviceaccount.com" % project_id
        self.private_key_id = "fake-key-id-1"
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.expires_in = expires_in
        self.answers = AnswerScript()
        self.token_answers = collections.deque()  # scripted token endpoint Answers
        self.access_tokens = {}  # token -> monotonic expiry
        self.lock = threading.Lock()
        self.server = TlsHttpServer(ca, self.handle, dns_names=(FCM_HOST, OAUTH_HOST),
                                    lifetime=lifetime)

    def pins(self):
        return ",".join("%s=127.0.0.1:%d" % (h, self.port) for h in (FCM_HOST, OAUTH_HOST))

    def service_account(self):
        pem = self.private.private_bytes(serialization.Encoding.PEM,
                                         serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()).decode()
        return json.dumps({"type": "service_account", "project_id": self.project_id,
                           "private_key_id": self.private_key_id, "private_key": pem,
                           "client_email": self.client_email, "client_id": "1234567890",
                           "token_uri": TOKEN_URI})

    def config(self):
        return '[push.fcm]\nservice_account = "env:XB_TEST_FCM_SA"\n'

    def env(self):
        return {"XB_TEST_FCM_SA": self.service_account()}

    def script(self, token, *answers):
        self.answers.add(token, *answers)

    def token_requests(self):
        return self.snapshot(lambda r: r.info.get("kind") == "token")

    def sends(self, token=None):
        return self.snapshot(lambda r: r.info.get("kind") == "send" and
                             (token is None or r.info.get("token") == token))

    def handle(self, request):
        if request.path == "/token":
            request.info["kind"] = "token"
            return self.handle_token(request)
        request.info["kind"] = "send"
        return self.handle_send(request)

    def handle_token(self, request):
        p = request.problems
        if request.method != "POST" or request.authority != OAUTH_HOST or \
                request.sni != OAUTH_HOST:
            p.append("token request is not POST to " + OAUTH_HOST)
        if media_type(request.headers) != "application/x-www-form-urlencoded":
            p.append("token request content-type is not form-urlencoded")
        try:
            form = urllib.parse.parse_qs(request.body.decode(), keep_blank_values=True,
                                         strict_parsing=True)
        except (ValueError, UnicodeDecodeError):
            form = {}
        if set(form) != {"grant_type", "assertion"} or \
                any(len(v) != 1 for v in form.values()):
            p.append("token form is not exactly grant_type and assertion")
        if form.get("grant_type") != [JWT_BEARER]:
            p.append("grant_type is not jwt-bearer")
        self.check_assertion((form.get("assertion") or [""])[0], p)
        self.record(request)
        with self.lock:
            if self.token_answers:
                return self.token_answers.popleft()
        if p:
            return Answer(400, {"error": "invalid_grant"}, [("content-type", "application/json")])
        token = "ya29.fake-" + os.urandom(12).hex()
        with self.lock:
            self.access_tokens[token] = time.monotonic() + self.expires_in
        request.info["access_token"] = token
        return Answer(200, {"access_token": token, "token_type": "Bearer",
                            "expires_in": self.expires_in},
                      [("content-type", "application/json")])

    def check_assertion(self, assertion, p):
        parts = split_jwt(assertion, p)
        if parts is None:
            return
        header, claims, signing_input, signature = parts
        if header.get("alg") != "RS256" or header.get("typ") != "JWT" or \
                not set(header) <= {"alg", "typ", "kid"} or \
                header.get("kid", self.private_key_id) != self.private_key_id:
            p.append("assertion header is not {alg: RS256, typ: JWT}")
        if set(claims) != {"iss", "scope", "aud", "iat", "exp"}:
            p.append("assertion claims are not exactly iss, scope, aud, iat, exp")
        if claims.get("iss") != self.client_email or claims.get("scope") != FCM_SCOPE or \
                claims.get("aud") != TOKEN_URI:
            p.append("assertion iss, scope or aud is wrong")
        iat, exp = claims.get("iat"), claims.get("exp")
        if not is_int(iat) or not is_int(exp) or exp != iat + 3600 or \
                abs(iat - time.time()) > 60:
            p.append("assertion iat/exp are not now and now+3600")
        try:
            self.private.public_key().verify(signature, signing_input, padding.PKCS1v15(),
                                             hashes.SHA256())
        except InvalidSignature:
            p.append("assertion signature does not verify")

    def handle_send(self, request):
        p = request.problems
        if request.method != "POST" or \
                request.path != "/v1/projects/%s/messages:send" % self.project_id:
            p.append("send is not POST /v1/projects/<project_id>/messages:send")
        if request.authority != FCM_HOST or request.sni != FCM_HOST:
            p.append("send authority or SNI is not " + FCM_HOST)
        if media_type(request.headers) != "application/json":
            p.append("send content-type is not application/json")
        auth = request.headers.get("authorization", "")
        access = auth[7:] if auth[:7].lower() == "bearer " else None
        request.info["access_token"] = access
        with self.lock:
            expiry = self.access_tokens.get(access)
        authorized = expiry is not None and time.monotonic() < expiry
        if not authorized:
            p.append("send bearer token is not a live access token from the token endpoint")
        self.check_send_body(request)
        self.record(request)
        if not authorized:
            return Answer(401, {"error": {"code": 401, "status": "UNAUTHENTICATED"}})
        if p:
            return Answer(400, {"error": {"code": 400, "status": "INVALID_ARGUMENT"}})
        token = request.info.get("token")
        scripted = self.answers.next(token) or FcmAnswer()
        return scripted.answer(self.project_id)

    def check_send_body(self, request):
        p = request.problems
        try:
            body = json.loads(request.body)
            message = body["message"]
            data = message["data"]
            token = message["token"]
        except (ValueError, KeyError, TypeError):
            p.append("send body is not {message: {token, data, ...}}")
            return
        request.info["token"] = token
        expected = {"message": {
            "token": token,
            "data": {"topic": data.get("topic"), "sequence_id": data.get("sequence_id")},
            "android": {"priority": "HIGH"},
            "apns": {"headers": {"apns-priority": "5", "apns-push-type": "background"},
                     "payload": {"aps": {"content-available": 1}}}}}
        if body != expected or not isinstance(token, str) or not token:
            p.append("send body is not exactly the body of 9.3")
        request.info["topic"] = decode_topic(data.get("topic"), p)
        request.info["sequence_id"] = decode_sequence_id(data.get("sequence_id"), p)


# ------------------------------------------------------------------------------------------------
# HTTPS webhooks (PUSH.md 9.4, 9.5: Standard Webhooks v1)


def webhook_signature(key, webhook_id, timestamp, body):
    """The v1 signature header value (PUSH.md 9.5)."""
    signed = webhook_id.encode() + b"." + timestamp.encode() + b"." + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


class WebhookReceiver(RecordingFake):
    """https://127.0.0.1:<port>/<path> for any number of paths, each with its signing key.
    `script(path, Answer...)` queues answers (default 200); a 3xx answer carries a Location to
    another path of this receiver (`redirect(path)`), so a followed redirect shows up here."""

    def __init__(self, ca, dns_names=(), lifetime=DEFAULT_LIFETIME):
        super().__init__()
        self.keys = {}
        self.ids = set()
        self.answers = AnswerScript()
        self.server = TlsHttpServer(ca, self.handle, dns_names=dns_names, ips=("127.0.0.1",),
                                    lifetime=lifetime)

    def url(self, path, key, host="127.0.0.1"):
        """Registers `path` ("/hook-1") with its signing key; returns the URL to register (at
        `host`, one of the certificate's names)."""
        self.keys[path] = key
        return "https://%s:%d%s" % (host, self.port, path)

    def connections(self):
        """TCP connections accepted so far (a refused destination must not even connect)."""
        with self.server.lock:
            return self.server.connections

    def script(self, path, *answers):
        self.answers.add(path, *answers)

    def redirect(self, path, status=307):
        target = "/redirected" + path
        return Answer(status, b"", [("location", "https://127.0.0.1:%d%s" % (self.port, target))])

    def for_path(self, path):
        return self.snapshot(lambda r: r.path == path)

    def handle(self, request):
        p, h = request.problems, request.headers
        if request.method != "POST":
            p.append("method is not POST")
        if media_type(h) != "application/json":
            p.append("content-type is not application/json")
        key = self.keys.get(request.path)
        if key is None:
            p.append("path was never registered (a followed redirect?)")
        webhook_id = h.get("webhook-id", "")
        if not UUID4_RE.match(webhook_id):
            p.append("webhook-id is not a UUID v4")
        with self.cond:
            if webhook_id in self.ids:
                p.append("webhook-id repeats an earlier attempt's")
            self.ids.add(webhook_id)
        timestamp = h.get("webhook-timestamp", "")
        if not DECIMAL_RE.match(timestamp) or abs(int(timestamp) - time.time()) > 300:
            p.append("webhook-timestamp is not current Unix seconds")
        if key is not None:
            expected = webhook_signature(key, webhook_id, timestamp, request.body)
            given = h.get("webhook-signature", "").split(" ")
            if not any(hmac.compare_digest(g.encode(), expected.encode()) for g in given):
                p.append("webhook-signature does not verify over the exact body")
        self.check_body(request)
        self.record(request)
        if p:
            return Answer(400, b"fake rejected the request")
        scripted = self.answers.next(request.path) or Answer(200, b"")
        if scripted.delay == 0:
            scripted.delay = self.answers.delay(request.path)
        return scripted

    def check_body(self, request):
        p = request.problems
        try:
            pairs = json.loads(request.body, object_pairs_hook=lambda kv: kv)
        except ValueError:
            p.append("body is not JSON")
            return
        if [k for k, _ in pairs] != ["topic", "sequence_id", "recipient_id"]:
            p.append("body keys are not topic, sequence_id, recipient_id in order")
            return
        body = dict(pairs)
        if json.dumps(body, separators=(",", ":")).encode() != request.body:
            p.append("body is not compact JSON")
        request.info["topic"] = decode_topic(body["topic"], p)
        request.info["sequence_id"] = decode_sequence_id(body["sequence_id"], p)
        rid = body["recipient_id"]
        if not isinstance(rid, str) or not re.fullmatch(r"[0-9a-f]{64}", rid):
            p.append("recipient_id is not 64 lowercase hex digits")
        else:
            request.info["recipient_id"] = bytes.fromhex(rid)
