"""AttachmentService.CreateUpload end to end (ATTACH.md sections 3-6 and 10): the admission rows
in order, the published AttachmentsConfiguration, real bytes PUT through the presigned request to a
strict S3 fake that verifies the signature with botocore, and botocore's signature for a spread of
generated inputs compared with the one the binary returns."""
import hashlib
import os
import random
import shutil
import socket
import subprocess
import time
import unittest
import urllib.parse
import urllib.request

import grpc

import attach_support as A
import harness
import health_pb2
import otlp_receiver
from xmtp.backend.v1 import backend_pb2 as pb

AK, SK = "AKIDSTATIC0001", "static-secret-" + "s" * 24
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
GET_CONFIGURATION = "/xmtp.backend.v1.ConfigurationService/GetConfiguration"


def health(server, service):
    with server.channel() as ch:
        return harness.unary(ch, HEALTH_CHECK, health_pb2.HealthCheckRequest(service=service),
                             health_pb2.HealthCheckResponse)[0].status


def configuration(server):
    with server.channel() as ch:
        return harness.unary(ch, GET_CONFIGURATION, pb.GetConfigurationRequest(),
                             pb.GetConfigurationResponse)[0]


class WithoutStorageTest(unittest.TestCase):
    # verifies: ATCH-001, ATCH-021 (row 1), OPS-004
    def test_unimplemented_and_not_published_and_healthy(self):
        with A.new_server("") as server:
            with server.channel() as ch:
                _, code, details = A.create_upload(ch, b"\x00" * 32, 10, api_key=None)
            self.assertEqual((code, details), (grpc.StatusCode.UNIMPLEMENTED,
                                               "attachment storage is not configured"))
            self.assertFalse(configuration(server).HasField("attachments"))
            self.assertEqual(health(server, A.SERVICE), health_pb2.HealthCheckResponse.SERVING)


class UploadTest(unittest.TestCase):
    """One server with static credentials in front of one S3 fake."""

    @classmethod
    def setUpClass(cls):
        cls.s3 = A.S3Fake({AK: (SK, "SESSION-" + "t" * 20)})
        extra = A.attachments_toml(cls.s3.endpoint,
                                   A.static_credentials_toml(AK, SK, "SESSION-" + "t" * 20),
                                   key_prefix="up/", max_upload_bytes=4096,
                                   retention_seconds=86400)
        cls.server = A.new_server(extra)
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.check_sanitizers()
        cls.s3.close()

    def upload(self, body, length=None):
        with self.server.channel() as ch:
            return A.create_upload(ch, A.sha256(body), len(body) if length is None else length)

    # verifies: ATCH-001, ATCH-003, ATCH-004, ATCH-006, ATCH-020
    def test_configuration_publishes_exactly_what_is_enforced(self):
        c = configuration(self.server)
        self.assertTrue(c.HasField("attachments"))
        self.assertEqual(c.attachments.base_url, A.BASE_URL)
        self.assertEqual(c.attachments.max_upload_bytes, 4096)
        self.assertEqual(c.attachments.retention_seconds, 86400)
        encoded = c.SerializeToString()
        for secret in (AK.encode(), SK.encode(), b"127.0.0.1", b"up/", b"SESSION"):
            self.assertNotIn(secret, encoded)
        # The published ceiling is the enforced one.
        self.assertEqual(self.upload(b"x" * 4096)[1], grpc.StatusCode.OK)
        self.assertEqual(self.upload(b"x", length=4097)[1:],
                         (grpc.StatusCode.INVALID_ARGUMENT,
                          "content_length is outside the upload limit"))

    # verifies: ATCH-021 (rows 2 and 3, in order), AUTH-001
    def test_admission_rows_in_order(self):
        with self.server.channel() as ch:
            bad_digest = (grpc.StatusCode.INVALID_ARGUMENT,
                          "content_digest must contain exactly 32 bytes")
            bad_length = (grpc.StatusCode.INVALID_ARGUMENT,
                          "content_length is outside the upload limit")
            self.assertEqual(A.create_upload(ch, b"\x01" * 31, 10)[1:], bad_digest)
            self.assertEqual(A.create_upload(ch, b"\x01" * 33, 0)[1:], bad_digest)  # row 2 first
            self.assertEqual(A.create_upload(ch, b"", 10)[1:], bad_digest)
            self.assertEqual(A.create_upload(ch, b"\x01" * 32, 0)[1:], bad_length)
            self.assertEqual(A.create_upload(ch, b"\x01" * 32, 2**64 - 1)[1:], bad_length)
            # Authentication before every row.
            self.assertEqual(A.create_upload(ch, b"\x01" * 31, 0, api_key=None)[1],
                             grpc.StatusCode.UNAUTHENTICATED)
            self.assertEqual(A.create_upload(ch, b"\x01" * 32, 5, api_key="wrong" * 8)[1],
                             grpc.StatusCode.UNAUTHENTICATED)

    # verifies: ATCH-023, ATCH-028, ATCH-025 (412 on the second upload)
    def test_real_bytes_round_trip_and_create_only(self):
        body = os.urandom(1234)
        response, code, details = self.upload(body)
        self.assertEqual(code, grpc.StatusCode.OK, details)
        self.assertEqual(response.method, "PUT")
        self.assertEqual([(h.name, h.value) for h in response.headers][:2],
                         [("content-length", "1234"), ("if-none-match", "*")])
        self.assertEqual(response.headers[2].name, "x-amz-checksum-sha256")
        self.assertEqual(len(response.headers), 3)
        self.assertEqual(response.expires_in_seconds, 900)
        query = A.presigned_query(response.url)
        self.assertEqual(query["X-Amz-Expires"], "900")
        path = urllib.parse.urlsplit(response.url).path
        self.assertEqual(path, "/attachments/up/" + hashlib.sha256(body).hexdigest())
        self.assertEqual(A.put(response, body), 200)
        self.assertEqual(A.get("http://127.0.0.1:%d%s" % (self.s3.port, path)), (200, body))
        # A second upload of the same bytes: the target answers 412 (stored).
        again, code, _ = self.upload(body)
        self.assertEqual(code, grpc.StatusCode.OK)
        self.assertEqual(A.put(again, body), 412)

    # verifies: ATCH-023 — the signature binds the bytes, the length and the precondition.
    def test_the_target_refuses_what_was_not_signed(self):
        body = os.urandom(300)
        response, code, _ = self.upload(body)
        self.assertEqual(code, grpc.StatusCode.OK)
        headers = [(h.name, h.value) for h in response.headers]
        # Other bytes of the same length: the checksum does not match the body.
        self.assertEqual(A.put(response, os.urandom(300)), 400)
        self.assertEqual(self.s3.refusals[-1], (400, "checksum"))
        # A longer body with its own length: the signed content-length differs.
        longer = [(n, str(len(body) + 1) if n == "content-length" else v) for n, v in headers]
        self.assertEqual(A.put(response, body + b"!", headers=longer), 403)
        self.assertEqual(self.s3.refusals[-1], (403, "signature"))
        # Without If-None-Match: * the signature does not hold.
        no_precondition = [(n, v) for n, v in headers if n != "if-none-match"]
        self.assertEqual(A.put(response, body, headers=no_precondition), 403)
        # Another object key: not signed for it.
        other = response.url.replace(hashlib.sha256(body).hexdigest(), "0" * 64)
        self.assertEqual(A.put(response, body, url=other), 403)
        # The signed request itself still works.
        self.assertEqual(A.put(response, body), 200)

    # verifies: ATCH-028 — an expired URL is refused by the target.
    def test_expired_url_is_refused(self):
        body = os.urandom(64)
        response, code, _ = self.upload(body)
        self.assertEqual(code, grpc.StatusCode.OK)
        self.s3.clock_offset = response.expires_in_seconds + 1
        try:
            self.assertEqual(A.put(response, body), 403)
            self.assertEqual(self.s3.refusals[-1], (403, "expired"))
        finally:
            self.s3.clock_offset = 0
        self.assertEqual(A.put(response, body), 200)

    # verifies: OPS-014, ATCH-006 — no URL, bucket, key, credential, digest in logs or metrics.
    def test_no_storage_data_in_logs_or_metrics(self):
        body = os.urandom(100)
        response, _, _ = self.upload(body)
        self.upload(b"", length=0)
        with self.server.channel() as ch:
            A.create_upload(ch, b"\x02" * 31, 10)
        signature = A.presigned_query(response.url)["X-Amz-Signature"]
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.server.metrics_port,
                                    timeout=5) as r:
            metrics = r.read().decode()
        self.assertIn('operation="rpc.create_upload"', metrics)
        text = "".join(self.server.lines) + self.server.stderr_text + metrics
        for secret in (AK, SK, "SESSION-", "attachments/", "up/", signature,
                       hashlib.sha256(body).hexdigest(), str(self.s3.port)):
            self.assertNotIn(secret, text)


class TelemetryTest(unittest.TestCase):
    # verifies: OPS-014, ATCH-006 — the rpc.create_upload span is exported under the request span,
    # and no exported span or log record holds a credential, URL, bucket, prefix, digest or length.
    def test_span_and_no_storage_data_in_exports(self):
        token = "SESSION-TOKEN-SECRET-" + "z" * 16
        digest = hashlib.sha256(b"telemetry bytes").digest()
        with otlp_receiver.Receiver() as receiver, A.S3Fake({AK: (SK, token)}) as s3:
            extra = A.attachments_toml(s3.endpoint, A.static_credentials_toml(AK, SK, token),
                                       bucket="secret-bucket-name", key_prefix="secret-prefix/")
            config = A.server_config(extra).replace(
                "[telemetry]\n", '[telemetry]\notlp_endpoint = "%s"\nsample_ratio = 1.0\n'
                'otlp_logs = true\n' % receiver.endpoint)
            with harness.Server(config=config, binary=harness.TEST_BINARY) as server:
                with server.channel() as ch:
                    response, code, _ = A.create_upload(ch, digest, 4321987)
                    self.assertEqual(code, grpc.StatusCode.OK)
                    A.create_upload(ch, digest[:5], 4321987)
                names = ("rpc.create_upload", "xmtp.backend.v1.AttachmentService/CreateUpload")
                spans = receiver.wait_spans(
                    lambda s: s if all(n in [x.name for x in s] for n in names) else None, 20,
                    "the upload spans")
                server.terminate()
                self.assertEqual(server.wait(15), 0)
            by_id = {x.span_id: x for x in spans}
            handler = [x for x in spans if x.name == "rpc.create_upload"][0]
            self.assertEqual(by_id[handler.parent_span_id].name,
                             "xmtp.backend.v1.AttachmentService/CreateUpload")
            exported = b"".join(receiver.bodies)
            signature = A.presigned_query(response.url)["X-Amz-Signature"].encode()
            for secret in (AK.encode(), SK.encode(), token.encode(), b"secret-bucket-name",
                           b"secret-prefix", signature, digest, digest.hex().encode(),
                           b"4321987", s3.endpoint.encode()):
                self.assertNotIn(secret, exported)


class BotocoreAgreesTest(unittest.TestCase):
    """For generated inputs (endpoint forms, prefixes, lengths, tokens, regions) the signature of
    the URL the binary returns is the one botocore computes for the same request, clock and
    credentials; the URL's path is built here from ATTACH.md 6.1, not read from the answer."""

    CASES = [
        # (endpoint path, bucket, key_prefix, region, token)
        ("", "attachments", "", "us-east-1", None),
        ("/storage", "xmtp-attachments", "", "eu-west-1", None),
        ("/storage/", "b", "p/", "ap-southeast-2", "tok-" + "x" * 40),
        ("/a/b", "bucket.with.dots", "deep/er/prefix-", "us-west-2", None),
        ("", "UPPER_lower:09", "x", "eu-central-1", "T0KEN/with+odd=chars"),
    ]

    # verifies: ATCH-023
    def test_signatures_match_botocore(self):
        rng = random.Random(31)
        for path, bucket, prefix, region, token in self.CASES:
            with self.subTest(path=path, bucket=bucket, prefix=prefix, region=region):
                self.check_case(rng, path, bucket, prefix, region, token)

    def check_case(self, rng, path, bucket, prefix, region, token):
        ak = "AK" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(14))
        sk = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz/+0123456789") for _ in range(40))
        ttl = rng.choice([300, 901, 3600])
        creds = A.static_credentials_toml(ak, sk, token)
        with A.S3Fake({ak: (sk, token)}, region=region, bucket=bucket,
                      path_prefix=path.rstrip("/")) as s3:
            endpoint = "http://127.0.0.1:%d%s" % (s3.port, path)
            extra = A.attachments_toml(endpoint, creds, region=region, bucket=bucket,
                                       key_prefix=prefix, ttl=ttl)
            with A.new_server(extra) as server, server.channel() as ch:
                for length in (1, rng.randrange(2, 10**6), 104857600):
                    digest = os.urandom(32)
                    response, code, details = A.create_upload(ch, digest, length)
                    self.assertEqual(code, grpc.StatusCode.OK, details)
                    self.assertEqual(response.expires_in_seconds, ttl)
                    self.assert_botocore_agrees(response, endpoint, bucket, prefix, digest,
                                                length, ak, sk, token, region, ttl)

    def assert_botocore_agrees(self, response, endpoint, bucket, prefix, digest, length, ak, sk,
                               token, region, ttl):
        query = A.presigned_query(response.url)
        segments = [s for s in urllib.parse.urlsplit(endpoint).path.split("/")[1:]]
        if segments and segments[-1] == "":
            segments.pop()
        segments.append(urllib.parse.quote(bucket, safe="-_.~"))
        segments += [s for s in (prefix + digest.hex()).split("/") if s]
        url = "%s://%s/%s" % (urllib.parse.urlsplit(endpoint).scheme,
                              urllib.parse.urlsplit(endpoint).netloc, "/".join(segments))
        self.assertEqual(response.url.split("?")[0], url)
        params = [("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
                  ("X-Amz-Credential", "%s/%s/%s/s3/aws4_request" % (ak, query["X-Amz-Date"][:8],
                                                                     region)),
                  ("X-Amz-Date", query["X-Amz-Date"]), ("X-Amz-Expires", str(ttl)),
                  ("X-Amz-SignedHeaders", A.SIGNED_HEADERS)]
        if token is not None:
            params.append(("X-Amz-Security-Token", token))
        unsigned = url + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote,
                                                      safe="-_.~")
        headers = [("content-length", str(length)), ("if-none-match", "*"),
                   ("x-amz-checksum-sha256", A.base64.b64encode(digest).decode())]
        self.assertEqual([(h.name, h.value) for h in response.headers], headers)
        expected = A.botocore_signature("PUT", unsigned, headers, sk, ak, token, region,
                                        query["X-Amz-Date"], ttl)
        self.assertEqual(query["X-Amz-Signature"], expected)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipIf(shutil.which("moto_server") is None, "moto_server is not on this machine")
class MotoTest(unittest.TestCase):
    """The same upload against moto's S3 (where the machine has moto_server): a second, outside
    implementation of the target accepts the presigned request and serves the bytes back."""

    # verifies: ATCH-023
    def test_upload_to_moto(self):
        port = free_port()
        moto = subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(moto.wait, 10)
        self.addCleanup(moto.terminate)
        endpoint = "http://127.0.0.1:%d" % port
        deadline = time.time() + 20
        while True:  # moto is up once it creates the bucket
            try:
                if A.put_bucket(endpoint + "/attachments") == 200:
                    break
            except OSError:
                pass
            self.assertLess(time.time(), deadline, "moto_server did not start")
            time.sleep(0.2)
        extra = A.attachments_toml(endpoint, A.static_credentials_toml(AK, SK), key_prefix="m/")
        body = os.urandom(777)
        with A.new_server(extra) as server, server.channel() as ch:
            response, code, details = A.create_upload(ch, A.sha256(body), len(body))
        self.assertEqual(code, grpc.StatusCode.OK, details)
        self.assertEqual(A.put(response, body), 200)
        path = "/attachments/m/" + hashlib.sha256(body).hexdigest()
        self.assertEqual(A.signed_get(endpoint + path, AK, SK), (200, body))


if __name__ == "__main__":
    unittest.main()
