"""Self-tests of the push provider fakes (push_fakes.py) with clients written here: an HTTP/2
client on python3-h2 and http.client for HTTP/1.1. No backend: this proves the fakes accept what
PUSH.md section 9 describes and catch what it forbids, so a push suite's failure points at the
backend. Includes the spec's own vectors (9.5 webhook signature, 7 suppression HMAC)."""
import base64
import hashlib
import hmac
import http.client
import json
import socket
import time
import unittest
import uuid

import h2.connection
import h2.events

import push_fakes as F
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

GROUP_TOPIC = bytes([0]) + bytes(range(16))
B64_TOPIC = base64.b64encode(GROUP_TOPIC).decode()


def h2_request(ca, port, host, method, path, headers=(), body=b"", timeout=10):
    """One request over a fresh HTTP/2 TLS connection: (status, {header: value}, body)."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock = ca.client_context(alpn=("h2",)).wrap_socket(raw, server_hostname=host)
    try:
        conn = h2.connection.H2Connection()
        conn.initiate_connection()
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, [(":method", method), (":scheme", "https"),
                                   (":authority", host), (":path", path)] + list(headers),
                          end_stream=not body)
        if body:
            conn.send_data(stream, body, end_stream=True)
        sock.sendall(conn.data_to_send())
        status, out_headers, out = None, {}, b""
        while True:
            data = sock.recv(65536)
            if not data:
                raise AssertionError("connection closed")
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    out_headers = {k.decode(): v.decode() for k, v in event.headers}
                    status = int(out_headers[":status"])
                elif isinstance(event, h2.events.DataReceived):
                    out += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, stream)
                elif isinstance(event, h2.events.StreamEnded):
                    return status, out_headers, out
            sock.sendall(conn.data_to_send())
    finally:
        sock.close()


def http1_request(ca, port, host, method, path, headers=None, body=b""):
    context = ca.client_context(alpn=("http/1.1",))
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    conn.sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port)),
                                    server_hostname=host)
    conn.request(method, path, body=body, headers=dict(headers or {}, host=host))
    resp = conn.getresponse()
    out = (resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    conn.close()
    return out


def es256_jwt(key, kid, claims, header=None):
    head = header or {"alg": "ES256", "kid": kid}
    signing_input = F.b64url(json.dumps(head).encode()) + "." + \
        F.b64url(json.dumps(claims).encode())
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return signing_input + "." + F.b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


class VectorTest(unittest.TestCase):
    # verifies: PUSH-235 — section 9.5's vector, through the receiver's own signature helper.
    def test_webhook_signature_vector(self):
        body = b'{"topic":"AQID","sequence_id":"9007199254740993","recipient_id":"0101"}'
        self.assertEqual(F.webhook_signature(b"\x07" * 32, "fixed-id", "1700000000", body),
                         "v1,IszeBLRjxb7spJ5RLi+KW0w/aK3Buioq9E6jl3MKWZw=")

    # verifies: PUSH-230 — section 7's vector (the suites compute sender_hmac the same way).
    def test_suppression_vector(self):
        mac = hmac.new(b"\x2a" * 42, b"suppressed payload", hashlib.sha256).hexdigest()
        self.assertEqual(mac, "c41d1dbce85bb51476279410d0e57263490979fe3179ae29ea520aee186a5e0d")
        self.assertEqual(1700000000000000000 // 10**9 // 2592000, 655)


class ApnsFakeTest(unittest.TestCase):
    def setUp(self):
        self.ca = F.TestCa()
        self.key = F.ApnsKey()
        self.fake = F.ApnsFake(self.ca, self.key)
        self.addCleanup(self.ca.cleanup)
        self.addCleanup(self.fake.close)

    def send(self, token="abcdef0123", jwt=None, headers=None, body=None, host=None):
        jwt = jwt or es256_jwt(self.key.private, self.fake.key_id,
                               {"iss": self.fake.team_id, "iat": int(time.time())})
        base = {"authorization": "bearer " + jwt, "apns-topic": self.fake.bundle_id,
                "apns-push-type": "background", "apns-priority": "5",
                "apns-collapse-id": B64_TOPIC, "content-type": "application/json"}
        base.update(headers or {})
        payload = body if body is not None else json.dumps(
            {"aps": {"content-available": 1}, "topic": B64_TOPIC, "sequence_id": "42"}).encode()
        host = host or F.APNS_HOSTS[0]
        return h2_request(self.ca, self.fake.port, host, "POST", "/3/device/" + token,
                          [(k, v) for k, v in base.items() if v is not None], payload)

    def test_a_good_request_is_delivered_and_decoded(self):
        status, _, _ = self.send()
        self.assertEqual(status, 200)
        self.assertEqual(self.fake.problems(), [])
        [req] = self.fake.for_token("abcdef0123")
        self.assertEqual(req.info["topic"], GROUP_TOPIC)
        self.assertEqual(req.info["sequence_id"], 42)
        self.assertEqual(req.sni, F.APNS_HOSTS[0])

    def test_scripted_answers_then_default(self):
        self.fake.script("abcdef0123", (410, "Unregistered"), (500, None))
        self.assertEqual(self.send()[0], 410)
        self.assertEqual(self.send()[0], 500)
        self.assertEqual(self.send()[0], 200)

    def test_expired_provider_token_stays_expired(self):
        jwt = es256_jwt(self.key.private, self.fake.key_id,
                        {"iss": self.fake.team_id, "iat": int(time.time())})
        self.fake.script("abcdef0123", (403, "ExpiredProviderToken"))
        status, _, body = self.send(jwt=jwt)
        self.assertEqual((status, json.loads(body)["reason"]), (403, "ExpiredProviderToken"))
        self.assertEqual(json.loads(self.send(jwt=jwt)[2])["reason"], "ExpiredProviderToken")
        self.assertEqual(self.send()[0], 200)  # a fresh token

    def test_bad_tokens_and_headers_are_caught(self):
        other = ec.generate_private_key(ec.SECP256R1())
        now = int(time.time())
        cases = [
            dict(jwt=es256_jwt(other, self.fake.key_id, {"iss": self.fake.team_id, "iat": now})),
            dict(jwt=es256_jwt(self.key.private, "other", {"iss": self.fake.team_id, "iat": now})),
            dict(jwt=es256_jwt(self.key.private, self.fake.key_id,
                               {"iss": self.fake.team_id, "iat": now, "exp": now + 60})),
            dict(jwt=es256_jwt(self.key.private, self.fake.key_id, {"iss": "x", "iat": now})),
            dict(headers={"apns-push-type": "alert"}),
            dict(headers={"apns-priority": "10"}),
            dict(headers={"apns-collapse-id": None}),
            dict(headers={"apns-topic": "org.other"}),
            dict(token="not-hex"),
            dict(host=F.APNS_HOSTS[1]),
            dict(body=json.dumps({"aps": {"content-available": 1}, "topic": B64_TOPIC,
                                  "sequence_id": 42}).encode()),
            dict(body=json.dumps({"aps": {"content-available": 1}, "topic": B64_TOPIC,
                                  "sequence_id": "42", "extra": 1}).encode()),
        ]
        for i, case in enumerate(cases):
            before = len(self.fake.problems())
            status, _, _ = self.send(**case)
            self.assertIn(status, (400, 403), case)
            self.assertGreater(len(self.fake.problems()), before, i)

    def test_der_signature_is_refused(self):
        head = F.b64url(json.dumps({"alg": "ES256", "kid": self.fake.key_id}).encode())
        claims = F.b64url(json.dumps({"iss": self.fake.team_id, "iat": int(time.time())})
                          .encode())
        der = self.key.private.sign((head + "." + claims).encode(), ec.ECDSA(hashes.SHA256()))
        self.assertEqual(self.send(jwt=head + "." + claims + "." + F.b64url(der))[0], 403)
        self.assertTrue(self.fake.problems())

    def test_slow_answers_overlap_on_one_connection(self):
        self.fake.answers.default_delay = 1.0
        raw = socket.create_connection(("127.0.0.1", self.fake.port))
        sock = self.ca.client_context(alpn=("h2",)).wrap_socket(
            raw, server_hostname=F.APNS_HOSTS[0])
        conn = h2.connection.H2Connection()
        conn.initiate_connection()
        jwt = es256_jwt(self.key.private, self.fake.key_id,
                        {"iss": self.fake.team_id, "iat": int(time.time())})
        body = json.dumps({"aps": {"content-available": 1}, "topic": B64_TOPIC,
                           "sequence_id": "1"}).encode()
        for _ in range(3):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, [(":method", "POST"), (":scheme", "https"),
                                    (":authority", F.APNS_HOSTS[0]), (":path", "/3/device/ab"),
                                    ("authorization", "bearer " + jwt),
                                    ("apns-topic", self.fake.bundle_id),
                                    ("apns-push-type", "background"), ("apns-priority", "5"),
                                    ("apns-collapse-id", B64_TOPIC),
                                    ("content-type", "application/json")])
            conn.send_data(sid, body, end_stream=True)
        sock.sendall(conn.data_to_send())
        started, ended = time.monotonic(), 0
        while ended < 3:
            for event in conn.receive_data(sock.recv(65536)):
                if isinstance(event, h2.events.StreamEnded):
                    ended += 1
            sock.sendall(conn.data_to_send())
        self.assertLess(time.monotonic() - started, 2.5)
        sock.close()
        self.assertEqual(self.fake.problems(), [])


class FcmFakeTest(unittest.TestCase):
    def setUp(self):
        self.ca = F.TestCa()
        self.fake = F.FcmFake(self.ca, expires_in=2)
        self.addCleanup(self.ca.cleanup)
        self.addCleanup(self.fake.close)

    def assertion(self, **changes):
        now = int(time.time())
        claims = {"iss": self.fake.client_email, "scope": F.FCM_SCOPE, "aud": F.TOKEN_URI,
                  "iat": now, "exp": now + 3600}
        claims.update(changes)
        signing_input = F.b64url(b'{"alg":"RS256","typ":"JWT"}') + "." + \
            F.b64url(json.dumps(claims).encode())
        sig = self.fake.private.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + F.b64url(sig)

    def token(self, assertion=None, send=h2_request):
        form = "grant_type=%s&assertion=%s" % (F.JWT_BEARER.replace(":", "%3A"),
                                               assertion or self.assertion())
        return send(self.ca, self.fake.port, F.OAUTH_HOST, "POST", "/token",
                    [("content-type", "application/x-www-form-urlencoded")], form.encode())

    def send(self, access, token="reg-token-1", body=None):
        payload = body or {"message": {
            "token": token, "data": {"topic": B64_TOPIC, "sequence_id": "7"},
            "android": {"priority": "HIGH"},
            "apns": {"headers": {"apns-priority": "5", "apns-push-type": "background"},
                     "payload": {"aps": {"content-available": 1}}}}}
        return h2_request(self.ca, self.fake.port, F.FCM_HOST, "POST",
                          "/v1/projects/%s/messages:send" % self.fake.project_id,
                          [("authorization", "Bearer " + access),
                           ("content-type", "application/json")], json.dumps(payload).encode())

    def test_token_then_send_over_h2_and_http1(self):
        for send in (h2_request, http1_request):
            status, _, body = self.token(send=send)
            self.assertEqual(status, 200)
            answer = json.loads(body)
            self.assertEqual((answer["token_type"], answer["expires_in"]), ("Bearer", 2))
            self.assertEqual(self.send(answer["access_token"])[0], 200)
        self.assertEqual(self.fake.problems(), [])
        self.assertEqual(len(self.fake.token_requests()), 2)
        self.assertEqual(self.fake.sends("reg-token-1")[0].info["sequence_id"], 7)

    def test_expired_access_token_is_refused(self):
        access = json.loads(self.token()[2])["access_token"]
        time.sleep(2.1)
        self.assertEqual(self.send(access)[0], 401)
        self.assertTrue(self.fake.problems())

    def test_bad_assertions_are_caught(self):
        for changes in ({"aud": "https://example.org"}, {"scope": "x"},
                        {"exp": int(time.time()) + 60}, {"extra": 1}):
            before = len(self.fake.problems())
            self.assertEqual(self.token(self.assertion(**changes))[0], 400)
            self.assertGreater(len(self.fake.problems()), before, changes)

    def test_scripted_errors(self):
        access = json.loads(self.token()[2])["access_token"]
        self.fake.script("reg-token-1", F.FcmAnswer(429, retry_after=3),
                         F.FcmAnswer(404, error_code="UNREGISTERED"))
        status, headers, _ = self.send(access)
        self.assertEqual((status, headers["retry-after"]), (429, "3"))
        status, _, body = self.send(access)
        self.assertEqual(status, 404)
        detail = json.loads(body)["error"]["details"][0]
        self.assertEqual((detail["@type"], detail["errorCode"]), (F.FCM_ERROR_TYPE, "UNREGISTERED"))
        self.assertEqual(self.send(access)[0], 200)
        self.assertEqual(self.fake.problems(), [])

    def test_wrong_body_is_caught(self):
        access = json.loads(self.token()[2])["access_token"]
        self.assertEqual(self.send(access, body={"message": {
            "token": "t", "data": {"topic": B64_TOPIC, "sequence_id": "7"},
            "notification": {"title": "x"}}})[0], 400)
        self.assertTrue(self.fake.problems())


class WebhookReceiverTest(unittest.TestCase):
    def setUp(self):
        self.ca = F.TestCa()
        self.fake = F.WebhookReceiver(self.ca)
        self.key = b"\x05" * 16
        self.url = self.fake.url("/hook-1", self.key)
        self.addCleanup(self.ca.cleanup)
        self.addCleanup(self.fake.close)

    def post(self, body=None, webhook_id=None, key=None, send=h2_request, path="/hook-1"):
        body = body if body is not None else \
            ('{"topic":"%s","sequence_id":"9","recipient_id":"%s"}' % (B64_TOPIC, "ab" * 32)
             ).encode()
        webhook_id = webhook_id or str(uuid.uuid4())
        ts = str(int(time.time()))
        headers = [("content-type", "application/json"), ("webhook-id", webhook_id),
                   ("webhook-timestamp", ts),
                   ("webhook-signature", F.webhook_signature(key or self.key, webhook_id, ts,
                                                             body))]
        if send is h2_request:
            return send(self.ca, self.fake.port, "127.0.0.1", "POST", path, headers, body)
        return send(self.ca, self.fake.port, "127.0.0.1", "POST", path, dict(headers), body)

    def test_signed_post_is_accepted_over_both_protocols(self):
        self.assertEqual(self.post()[0], 200)
        self.assertEqual(self.post(send=http1_request)[0], 200)
        self.assertEqual(self.fake.problems(), [])
        req = self.fake.for_path("/hook-1")[0]
        self.assertEqual(req.info["recipient_id"], b"\xab" * 32)
        self.assertEqual(self.url, "https://127.0.0.1:%d/hook-1" % self.fake.port)

    def test_forgeries_are_caught(self):
        same_id = str(uuid.uuid4())
        self.assertEqual(self.post(webhook_id=same_id)[0], 200)
        cases = [dict(webhook_id=same_id), dict(key=b"\x06" * 16),
                 dict(webhook_id="not-a-uuid"),
                 dict(body=('{"sequence_id":"9","topic":"%s","recipient_id":"%s"}'
                            % (B64_TOPIC, "ab" * 32)).encode()),
                 dict(body=('{"topic": "%s","sequence_id":"9","recipient_id":"%s"}'
                            % (B64_TOPIC, "ab" * 32)).encode()),
                 dict(path="/never-registered")]
        for case in cases:
            before = len(self.fake.problems())
            self.assertEqual(self.post(**case)[0], 400, case)
            self.assertGreater(len(self.fake.problems()), before, case)

    def test_scripted_status_and_redirect(self):
        self.fake.script("/hook-1", F.Answer(404), self.fake.redirect("/hook-1"))
        self.assertEqual(self.post()[0], 404)
        status, headers, _ = self.post()
        self.assertEqual(status, 307)
        self.assertTrue(headers["location"].endswith("/redirected/hook-1"))
        self.assertEqual(self.post()[0], 200)


if __name__ == "__main__":
    unittest.main()
