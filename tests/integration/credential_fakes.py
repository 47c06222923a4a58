"""Loopback fakes of the AWS endpoints the HTTP credential sources ask (ATTACH.md section 7), for
the attachment suites.

Written from AWS's documentation, never from the backend's code. Each fake checks what it
receives on its own and records every request with the problems it found (push_fakes'
RecordingFake); a suite asserts `fake.problems() == []` besides the outcomes it drives. Each hands
out credentials whose access key id counts up ("ASIASTS0001", ...) with an expiry `lifetime`
seconds ahead, and answers `keys(access_key_id)` -> (secret, token) for S3Fake. `failing = True`
makes every answer a 500.

- StsFake: https://sts.<region>.amazonaws.com/ (TLS, TestCa). AssumeRoleWithWebIdentity must be
  unsigned and carry the expected token; AssumeRole's SigV4 Authorization header is recomputed
  with python3-botocore (botocore.auth.SigV4Auth) from the expected source credentials.
- ImdsFake: plain http://169.254.169.254 (IMDSv2 only: the token PUT is required).
- ContainerFake: plain http on 127.0.0.1, behind 169.254.170.2 or asked directly (full URI);
  checks the Authorization header.
- SsoPortalFake: https://portal.sso.<region>.amazonaws.com (TLS); checks x-amz-sso_bearer_token.

The test build pins the fixed hosts to the fakes (`pins()`; env XB_TEST_PROVIDER_PINS); the real
addresses are never contacted.
"""
import datetime
import json
import socket
import threading
import time
import urllib.parse
import xml.sax.saxutils

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from push_fakes import (DEFAULT_LIFETIME, Answer, Http1Connection, LoopbackHttpServer,
                        RecordingFake, TlsHttpServer)

IMDS_HOST = "169.254.169.254"
CONTAINER_HOST = "169.254.170.2"
STS_VERSION = "2011-06-15"
FORM_TYPE = "application/x-www-form-urlencoded"


def iso8601(epoch_seconds):
    return datetime.datetime.fromtimestamp(int(epoch_seconds), datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


class PlainHttpServer(LoopbackHttpServer):
    """LoopbackHttpServer over plain HTTP/1.1 (IMDS and the container endpoint)."""

    def __init__(self, handler, lifetime=DEFAULT_LIFETIME):
        super().__init__(handler, lifetime)
        self.start()

    def _serve(self, sock):
        try:
            sock.settimeout(0.05)
            Http1Connection(self, sock, None).run()
        except OSError:
            pass
        finally:
            sock.close()


class CredentialFake(RecordingFake):
    """What the four fakes share: issuing counted credentials and remembering them."""

    prefix = "ASIAFAKE"

    def __init__(self, lifetime_seconds):
        super().__init__()
        self.lifetime_seconds = lifetime_seconds
        self.failing = False
        self.issued = {}  # access key id -> (secret, token)
        self.counter = 0

    def issue(self):
        """(access key id, secret, token, expiry epoch seconds) of new credentials."""
        with self.cond:
            self.counter += 1
            key = "%s%04d" % (self.prefix, self.counter)
            secret = "secret-%s-%d" % (self.prefix.lower(), self.counter)
            token = "token-%s-%d" % (self.prefix.lower(), self.counter)
            self.issued[key] = (secret, token)
        return key, secret, token, time.time() + self.lifetime_seconds

    def keys(self, access_key_id):
        with self.cond:
            return self.issued.get(access_key_id)

    def issued_ids(self):
        with self.cond:
            return sorted(self.issued)


class StsFake(CredentialFake):
    """STS's Query API for AssumeRole and AssumeRoleWithWebIdentity."""

    prefix = "ASIASTS"

    def __init__(self, ca, region="us-east-1", role_arn="arn:aws:iam::123456789012:role/attach",
                 web_token=None, source=None, external_id=None, lifetime_seconds=3600):
        super().__init__(lifetime_seconds)
        self.host = "sts.%s.amazonaws.com" % region
        self.region = region
        self.role_arn = role_arn
        self.web_token = web_token  # what AssumeRoleWithWebIdentity must carry
        self.source = source  # (access key id, secret, token or None) AssumeRole is signed with
        self.external_id = external_id
        self.server = TlsHttpServer(ca, self.handle, dns_names=(self.host,))

    def pins(self):
        return "%s=127.0.0.1:%d" % (self.host, self.port)

    def handle(self, request):
        p = request.problems
        form = urllib.parse.parse_qs(request.body.decode("utf-8", "replace"),
                                     keep_blank_values=True)
        fields = {k: v[0] for k, v in form.items()}
        request.info["form"] = fields
        if request.method != "POST" or request.path != "/":
            p.append("not a POST to /")
        if request.authority != self.host:
            p.append("host is not " + self.host)
        if request.headers.get("content-type", "").split(";")[0].strip() != FORM_TYPE:
            p.append("content-type is not a form")
        if any(len(v) != 1 for v in form.values()):
            p.append("a form field is repeated")
        if fields.get("Version") != STS_VERSION:
            p.append("Version is not " + STS_VERSION)
        if fields.get("RoleArn") != self.role_arn:
            p.append("RoleArn is not the expected role")
        if not 2 <= len(fields.get("RoleSessionName", "")) <= 64:
            p.append("RoleSessionName is missing or too long")
        if "DurationSeconds" in fields:
            p.append("DurationSeconds sent")
        action = fields.get("Action")
        if action == "AssumeRoleWithWebIdentity":
            if "authorization" in request.headers:
                p.append("AssumeRoleWithWebIdentity is signed")
            if fields.get("WebIdentityToken") != self.web_token:
                p.append("WebIdentityToken is not the token file's content")
        elif action == "AssumeRole":
            if fields.get("ExternalId") != self.external_id:
                p.append("ExternalId is not the configured one")
            self.check_signature(request)
        else:
            p.append("Action is not an assume-role action")
        self.record(request)
        if self.failing or p:
            return Answer(500 if self.failing else 400,
                          b"<ErrorResponse><Error><Code>Fake</Code></Error></ErrorResponse>")
        return Answer(200, self.answer_xml(action).encode(), headers=[("content-type", "text/xml")])

    def check_signature(self, request):
        """Recomputes the SigV4 Authorization with botocore over the headers the request signed."""
        p, h = request.problems, request.headers
        if self.source is None:
            p.append("no source credentials expected")
            return
        key, secret, token = self.source
        authorization = h.get("authorization", "")
        parts = dict(part.strip().split("=", 1) for part in
                     authorization[len("AWS4-HMAC-SHA256 "):].split(",") if "=" in part)
        amz_date = h.get("x-amz-date", "")
        scope = "%s/%s/%s/sts/aws4_request" % (key, amz_date[:8], self.region)
        if not authorization.startswith("AWS4-HMAC-SHA256 ") or parts.get("Credential") != scope:
            p.append("authorization is not AWS4-HMAC-SHA256 with the source key's sts scope")
            return
        signed = parts.get("SignedHeaders", "").split(";")
        if not {"host", "x-amz-date", "content-type"} <= set(signed) or \
                (token is not None and "x-amz-security-token" not in signed):
            p.append("host, x-amz-date, content-type or the token header is not signed")
        if h.get("x-amz-security-token") != token:
            p.append("x-amz-security-token is not the source's session token")
        headers = {name: h.get(name, "") for name in signed if name != "host"}
        aws_request = AWSRequest(method="POST", url="https://%s/" % self.host, data=request.body,
                                 headers=headers)
        aws_request.context["timestamp"] = amz_date
        auth = SigV4Auth(Credentials(key, secret, token), "sts", self.region)
        canonical = auth.canonical_request(aws_request)
        expected = auth.signature(auth.string_to_sign(aws_request, canonical), aws_request)
        if parts.get("Signature") != expected:
            p.append("signature does not verify with botocore")

    def answer_xml(self, action):
        key, secret, token, expiry = self.issue()
        esc = xml.sax.saxutils.escape
        return ('<%sResponse xmlns="https://sts.amazonaws.com/doc/%s/">\n  <%sResult>\n'
                '    <Credentials>\n      <AccessKeyId>%s</AccessKeyId>\n'
                '      <SecretAccessKey>%s</SecretAccessKey>\n'
                '      <SessionToken>%s</SessionToken>\n      <Expiration>%s</Expiration>\n'
                '    </Credentials>\n  </%sResult>\n</%sResponse>\n' %
                (action, STS_VERSION, action, esc(key), esc(secret), esc(token),
                 iso8601(expiry), action, action))


def credentials_json(fake, extra=None):
    key, secret, token, expiry = fake.issue()
    body = {"AccessKeyId": key, "SecretAccessKey": secret, "Token": token,
            "Expiration": iso8601(expiry)}
    body.update(extra or {})
    return Answer(200, body, headers=[("content-type", "application/json")])


class ImdsFake(CredentialFake):
    """IMDSv2 only: PUT /latest/api/token (ttl header 1..21600) issues a token; every GET must
    carry one it issued (else 401 and a problem)."""

    prefix = "ASIAIMDS"
    TOKEN_PATH = "/latest/api/token"
    CREDENTIALS_PATH = "/latest/meta-data/iam/security-credentials/"

    def __init__(self, role="attach-role", lifetime_seconds=3600):
        super().__init__(lifetime_seconds)
        self.role = role
        self.tokens = set()
        self.server = PlainHttpServer(self.handle)

    def pins(self):
        return "%s=127.0.0.1:%d" % (IMDS_HOST, self.port)

    def handle(self, request):
        p = request.problems
        if request.authority != IMDS_HOST:
            p.append("host is not " + IMDS_HOST)
        self.record(request)
        if self.failing:
            return Answer(500, b"")
        if request.method == "PUT" and request.path == self.TOKEN_PATH:
            ttl = request.headers.get("x-aws-ec2-metadata-token-ttl-seconds", "")
            if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
                p.append("token ttl header missing or out of range")
                return Answer(400, b"")
            token = "imds-token-%d" % (len(self.tokens) + 1)
            self.tokens.add(token)
            return Answer(200, token.encode(), headers=[(
                "x-aws-ec2-metadata-token-ttl-seconds", ttl)])
        if request.method != "GET":
            p.append("unexpected method")
            return Answer(405, b"")
        if request.headers.get("x-aws-ec2-metadata-token") not in self.tokens:
            p.append("GET without an issued token (IMDSv1)")
            return Answer(401, b"")
        if request.path == self.CREDENTIALS_PATH:
            return Answer(200, self.role.encode())
        if request.path == self.CREDENTIALS_PATH + self.role:
            return credentials_json(self, {"Code": "Success", "Type": "AWS-HMAC",
                                           "LastUpdated": iso8601(time.time())})
        p.append("unexpected path")
        return Answer(404, b"")


class ContainerFake(CredentialFake):
    """The container credential endpoint at `path`; `authorization` is the header it wants
    (None: none)."""

    prefix = "ASIACTR"

    def __init__(self, path="/v2/credentials/task-1", authorization=None, lifetime_seconds=3600):
        super().__init__(lifetime_seconds)
        self.path = path
        self.authorization = authorization
        self.server = PlainHttpServer(self.handle)

    def pins(self):
        return "%s=127.0.0.1:%d" % (CONTAINER_HOST, self.port)

    def full_uri(self):
        return "http://127.0.0.1:%d%s" % (self.port, self.path)

    def handle(self, request):
        p = request.problems
        if request.method != "GET" or request.path != self.path:
            p.append("not a GET of the credential path")
        if request.headers.get("authorization") != self.authorization:
            p.append("authorization is not the expected token")
        self.record(request)
        if self.failing:
            return Answer(500, b"")
        if p:
            return Answer(403, b"")
        return credentials_json(self)


class SsoPortalFake(CredentialFake):
    """GetRoleCredentials (GET /federation/credentials?account_id=&role_name=) with the bearer
    token in x-amz-sso_bearer_token."""

    prefix = "ASIASSO"

    def __init__(self, ca, access_token, region="us-east-1", account_id="123456789012",
                 role_name="AttachRole", lifetime_seconds=3600):
        super().__init__(lifetime_seconds)
        self.host = "portal.sso.%s.amazonaws.com" % region
        self.access_token = access_token
        self.account_id = account_id
        self.role_name = role_name
        self.server = TlsHttpServer(ca, self.handle, dns_names=(self.host,))

    def pins(self):
        return "%s=127.0.0.1:%d" % (self.host, self.port)

    def handle(self, request):
        p = request.problems
        parts = urllib.parse.urlsplit(request.path)
        query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        if request.method != "GET" or parts.path != "/federation/credentials":
            p.append("not a GET of /federation/credentials")
        if request.authority != self.host:
            p.append("host is not " + self.host)
        if query != {"account_id": self.account_id, "role_name": self.role_name}:
            p.append("query is not exactly account_id and role_name")
        if request.headers.get("x-amz-sso_bearer_token") != self.access_token:
            p.append("x-amz-sso_bearer_token is not the cached access token")
        self.record(request)
        if self.failing:
            return Answer(500, b"")
        if p:
            return Answer(401, {"message": "Session token not found or invalid"})
        key, secret, token, expiry = self.issue()
        return Answer(200, {"roleCredentials": {
            "accessKeyId": key, "secretAccessKey": secret, "sessionToken": token,
            "expiration": int(expiry * 1000)}})
