"""Attachments (ATTACH.md) for the integration suites: a strict loopback S3 fake, the server's
[attachments] section, CreateUpload, and sending a presigned request.

S3Fake is written from the spec and AWS's S3 behaviour, never from the backend's code. It
recomputes every presigned PUT's SigV4 signature with Debian's python3-botocore
(botocore.auth.S3SigV4QueryAuth) from what it received, and enforces what ATTACH.md section 9 asks
of a target: the signature and its expiry (403), the signed content-length against the body (400),
x-amz-checksum-sha256 against the body's SHA-256 (400), and If-None-Match: * (412 when the key
exists). Objects are served back to an unsigned GET at the same path. Every refusal is also
recorded in `refusals` with its reason, so a test can tell a 403 for a bad signature from one for
an expired URL.

The fake binds 127.0.0.1:0 (plain HTTP: ATTACH.md 2.2 allows http to loopback) and stops on
close() or as a context manager.
"""
import base64
import hashlib
import hmac
import http.client
import http.server
import threading
import time
import urllib.parse

import grpc
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

import harness
from xmtp.backend.v1 import backend_pb2 as pb

CREATE_UPLOAD = "/xmtp.backend.v1.AttachmentService/CreateUpload"
SERVICE = "xmtp.backend.v1.AttachmentService"
API_KEY = "attach-api-key-" + "q" * 32
BASE_URL = "https://files.example.com/attachments"
SIGNED_HEADERS = "content-length;host;if-none-match;x-amz-checksum-sha256"
UNAVAILABLE = (grpc.StatusCode.UNAVAILABLE, "storage credentials unavailable")


def attachments_toml(endpoint, credentials_toml, region="us-east-1", bucket="attachments",
                     key_prefix="", ttl=900, max_upload_bytes=None, retention_seconds=None,
                     auth=True):
    """The [attachments] section (and, with `auth`, an [auth] table with API_KEY).
    `credentials_toml` is the body of [attachments.target.S3.credentials], e.g.
    'kind = "static"\\naccess_key_id = "AK"\\nsecret_access_key = "SK"\\n'."""
    text = '[attachments]\nbase_url = "%s"\n' % BASE_URL
    if max_upload_bytes is not None:
        text += "max_upload_bytes = %d\n" % max_upload_bytes
    if retention_seconds is not None:
        text += "retention_seconds = %d\n" % retention_seconds
    text += ('[attachments.target.S3]\nendpoint = "%s"\nregion = "%s"\nbucket = "%s"\n'
             'key_prefix = "%s"\npresign_ttl_seconds = %d\n'
             % (endpoint, region, bucket, key_prefix, ttl))
    text += "[attachments.target.S3.credentials]\n" + credentials_toml
    if auth:
        text += '[auth]\nenabled = true\n[auth.api_keys]\nci = "%s"\n' % API_KEY
    return text


def static_credentials_toml(access_key_id, secret, token=None):
    text = 'kind = "static"\naccess_key_id = "%s"\nsecret_access_key = "%s"\n' % (
        access_key_id, secret)
    if token is not None:
        text += 'session_token = "%s"\n' % token
    return text


def server_config(extra, log_level="debug", server_extra=""):
    """harness.minimal_config + `extra`, logging at `log_level` (OPS-014 holds at DEBUG too), with
    `server_extra` lines in [server]."""
    return harness.minimal_config(extra).replace(
        'log_format = "json"\n',
        'log_format = "json"\nlog_level = "%s"\n%s' % (log_level, server_extra), 1)


def new_server(extra, env=None, binary=None, server_extra=""):
    """A harness.Server (not started) of the test build with `extra` configuration."""
    return harness.Server(config=server_config(extra, server_extra=server_extra),
                          binary=binary or harness.TEST_BINARY, env=env)


def create_upload(channel, digest, length, api_key=API_KEY, timeout=15):
    """(CreateUploadResponse or None, grpc code, details)."""
    metadata = (("authorization", "Bearer " + api_key),) if api_key else None
    request = pb.CreateUploadRequest(content_digest=digest, content_length=length)
    try:
        response, _ = harness.unary(channel, CREATE_UPLOAD, request, pb.CreateUploadResponse,
                                    timeout=timeout, metadata=metadata)
        return response, grpc.StatusCode.OK, None
    except grpc.RpcError as e:
        return None, e.code(), e.details()


def put(response, body, headers=None, url=None):
    """Sends the presigned request of `response` (method, URL, every header exactly as given,
    ATCH-024) with `body`; `headers` replaces the given headers when set. Returns the HTTP status."""
    url = urllib.parse.urlsplit(url or response.url)
    given = headers if headers is not None else [(h.name, h.value) for h in response.headers]
    conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=10)
    try:
        conn.putrequest(response.method, url.path + "?" + url.query, skip_accept_encoding=True)
        for name, value in given:
            conn.putheader(name, value)
        conn.endheaders()
        conn.send(body)
        reply = conn.getresponse()
        reply.read()
        return reply.status
    finally:
        conn.close()


def _request(method, url, headers=None, body=None):
    """(status, body) of one plain-HTTP request to the path of `url` (its query dropped)."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=10)
    try:
        conn.request(method, parts.path, body=body, headers=headers or {})
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def get(url):
    """(status, body) of an unsigned GET."""
    return _request("GET", url)


def signed_get(url, access_key_id, secret, region="us-east-1"):
    """(status, body) of a GET signed by botocore (header form): reads a private object back."""
    request = AWSRequest(method="GET", url=url)
    S3SigV4Auth(Credentials(access_key_id, secret), "s3", region).add_auth(request)
    return _request("GET", url, headers=dict(request.headers.items()))


def put_bucket(url):
    """Creates a bucket with an unsigned PUT (moto accepts it); the HTTP status."""
    return _request("PUT", url)[0]


def sha256(data):
    return hashlib.sha256(data).digest()


def presigned_query(url):
    """The presigned URL's query parameters as a dict (values decoded)."""
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query, keep_blank_values=True))


def botocore_signature(method, url_without_signature, headers, secret, access_key_id, token,
                       region, amz_date, expires):
    """The SigV4 query signature botocore computes for the request: `url_without_signature`
    already carries the X-Amz-* parameters (as a presigned URL does), `headers` the signed headers
    other than host (botocore derives host from the URL)."""
    auth = S3SigV4QueryAuth(Credentials(access_key_id, secret, token), "s3", region,
                            expires=expires)
    request = AWSRequest(method=method, url=url_without_signature, headers=dict(headers))
    request.context["timestamp"] = amz_date
    canonical = auth.canonical_request(request)
    return auth.signature(auth.string_to_sign(request, canonical), request)


class S3Fake:
    """A strict S3-compatible target on 127.0.0.1. `keys` maps an access key id to (secret,
    session token or None); a callable `keys(access_key_id)` may be given instead for sources that
    rotate. `clock_offset` (seconds) moves the fake's clock, to test expiry."""

    def __init__(self, keys, region="us-east-1", bucket="attachments", path_prefix=""):
        self.keys = keys
        self.region = region
        self.bucket = bucket
        self.path_prefix = path_prefix  # the endpoint's own path, e.g. "/storage"
        self.clock_offset = 0
        self.objects = {}  # object path -> bytes
        self.refusals = []  # (status, reason)
        self.accepted = []  # (path, access key id)
        self.lock = threading.Lock()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_PUT(self):
                fake._put(self)

            def do_GET(self):
                fake._get(self)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def port(self):
        return self.httpd.server_address[1]

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d%s" % (self.port, self.path_prefix)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _secret_for(self, access_key_id):
        if callable(self.keys):
            return self.keys(access_key_id)
        return self.keys.get(access_key_id)

    def _answer(self, handler, status, reason, body=b""):
        if status >= 300:
            with self.lock:
                self.refusals.append((status, reason))
        handler.send_response(status)
        handler.send_header("content-length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _read_body(self, handler):
        length = handler.headers.get("content-length")
        if length is None or not length.isdigit():
            return None
        return handler.rfile.read(int(length))

    def _check_signature(self, handler, query):
        """None when the query signature is valid and not expired; else (status, reason)."""
        if query.get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256":
            return 403, "algorithm"
        if query.get("X-Amz-SignedHeaders") != SIGNED_HEADERS:
            return 403, "signed headers"
        credential = query.get("X-Amz-Credential", "").split("/")
        if len(credential) != 5 or credential[2:] != [self.region, "s3", "aws4_request"]:
            return 403, "credential scope"
        known = self._secret_for(credential[0])
        if known is None:
            return 403, "unknown access key"
        secret, token = known
        if query.get("X-Amz-Security-Token") != token:
            return 403, "session token"
        amz_date = query.get("X-Amz-Date", "")
        if credential[1] != amz_date[:8]:
            return 403, "credential date"
        try:
            signed_at = time.mktime(time.strptime(amz_date, "%Y%m%dT%H%M%SZ")) - time.timezone
            expires = int(query["X-Amz-Expires"])
        except (KeyError, ValueError):
            return 403, "date or expires"
        if not 1 <= expires <= 604800:
            return 403, "expires out of range"
        if time.time() + self.clock_offset > signed_at + expires:
            return 403, "expired"
        raw_query = urllib.parse.urlsplit(handler.path).query
        unsigned = "&".join(p for p in raw_query.split("&") if not p.startswith("X-Amz-Signature="))
        url = "http://%s%s?%s" % (handler.headers["host"], urllib.parse.urlsplit(handler.path).path,
                                  unsigned)
        signed = [(name, handler.headers.get(name, "")) for name in
                  ("content-length", "if-none-match", "x-amz-checksum-sha256")]
        expected = botocore_signature("PUT", url, signed, secret, credential[0], token,
                                      self.region, amz_date, expires)
        if not hmac.compare_digest(expected, query.get("X-Amz-Signature", "")):
            return 403, "signature"
        return None

    def _put(self, handler):
        parts = urllib.parse.urlsplit(handler.path)
        query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        body = self._read_body(handler)
        if body is None:
            return self._answer(handler, 411, "length required")
        refused = self._check_signature(handler, query)
        if refused is not None:
            return self._answer(handler, *refused)
        if handler.headers.get("if-none-match") != "*":
            return self._answer(handler, 400, "create-only precondition missing")
        checksum = handler.headers.get("x-amz-checksum-sha256", "")
        if base64.b64encode(sha256(body)).decode() != checksum:
            return self._answer(handler, 400, "checksum")
        if not parts.path.startswith("%s/%s/" % (self.path_prefix, self.bucket)):
            return self._answer(handler, 404, "bucket")
        with self.lock:
            if parts.path in self.objects:
                exists = True
            else:
                exists = False
                self.objects[parts.path] = body
                self.accepted.append((parts.path, query["X-Amz-Credential"].split("/")[0]))
        if exists:
            return self._answer(handler, 412, "exists")
        return self._answer(handler, 200, "stored")

    def _get(self, handler):
        path = urllib.parse.urlsplit(handler.path).path
        with self.lock:
            body = self.objects.get(path)
        if body is None:
            return self._answer(handler, 404, "no object")
        return self._answer(handler, 200, "object", body)
