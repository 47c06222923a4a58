"""Authentication (spec/AUTH.md) against the real binary: API keys, JWTs signed here with
python3-cryptography and verified against a JWKS served here over HTTPS (a test CA the backend
trusts through SSL_CERT_FILE) or plain HTTP on loopback, every rejection reason with its status,
message, metric label and log line, auth before drain admission, and the JWKS staleness drain."""
import http.client
import json
import threading
import time
import unittest

import grpc

import harness
import health_pb2
import jwks_server
import otlp_receiver
from xmtp.backend.v1 import backend_pb2

SLEEP = "/xb.test.v1.TestService/Sleep"
GET_CONFIGURATION = "/xmtp.backend.v1.ConfigurationService/GetConfiguration"
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
API_KEY = "k3y-" + "x" * 40
API_KEY_NAME = "ci.runner-1"
AUDIENCE = "xmtp-test"
ISSUER = "https://issuer.test"
SCOPE = "xmtp"
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
LOG_FIELDS = {"time", "level", "msg", "request_id", "identifier", "reason"}


def auth_config(auth_toml, extra_server=""):
    return harness.minimal_config().replace(
        'log_format = "json"\n', 'log_format = "json"\nlog_level = "debug"\n' + extra_server
    ) + auth_toml


def sleep_call(channel, metadata=None, ms=0, timeout=10):
    return harness.unary(channel, SLEEP, health_pb2.HealthCheckRequest(service=str(ms)),
                         health_pb2.HealthCheckResponse, timeout=timeout, metadata=metadata)


def bearer(token):
    return (("authorization", "Bearer " + token),)


def good_claims(**changes):
    claims = {"exp": int(time.time()) + 600, "aud": AUDIENCE, "iss": ISSUER,
              "scope": "other " + SCOPE, "sub": "subject-value-never-logged"}
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


def request_id_of(error):
    for md in (error.initial_metadata(), error.trailing_metadata()):
        for key, value in md or ():
            if key == "x-request-id":
                return value
    return None


class AuthCase(unittest.TestCase):
    def assert_rejected(self, server, metadata, code, message, reason, secrets=()):
        """One rejected call: its status and message, +1 on the reason's counter, and one DEBUG
        log line with exactly request_id, identifier and reason (AUTH-014, AUTH-027)."""
        label = 'reason="%s"' % reason
        before = harness.metric(server, "xmtp_auth_rejections_total", label)
        with server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                sleep_call(ch, metadata)
        error = ctx.exception
        self.assertEqual(error.code(), code)
        self.assertEqual(error.details(), message)
        request_id = request_id_of(error)
        self.assertRegex(request_id or "", harness.UUID_RE)
        harness.wait_for(lambda: harness.metric(server, "xmtp_auth_rejections_total", label) == before + 1,
                         10, "the rejection counter")

        def record():
            for r in server.log_records():
                if r.get("msg") == "authentication rejected" and r.get("request_id") == request_id:
                    return r
            return None
        line = harness.wait_for(record, 10, "the rejection log line")
        self.assertEqual(set(line), LOG_FIELDS)
        self.assertEqual(line["level"], "debug")
        self.assertEqual(line["identifier"], "test.local.xmtp")
        self.assertEqual(line["reason"], reason)
        text = "".join(server.lines)
        for secret in secrets:
            self.assertNotIn(secret, text)


class JwtTest(AuthCase):
    """A JWKS over HTTPS with RSA, EC P-256, EC P-384 and Ed25519 keys, plus one API key."""

    @classmethod
    def setUpClass(cls):
        cls.ca = jwks_server.TestCa()
        cls.keys = {
            "RS256": jwks_server.SigningKey("RS256", "rsa-1"),
            "ES256": jwks_server.SigningKey("ES256", "p256-1"),
            "ES384": jwks_server.SigningKey("ES384", "p384-1"),
            "EdDSA": jwks_server.SigningKey("EdDSA", "ed-1"),
        }
        cls.jwks = jwks_server.JwksServer(cls.keys.values(), ca=cls.ca)
        config = auth_config(
            '[auth]\nenabled = true\njwks_url = "%s"\naudiences = ["%s"]\nissuers = ["%s"]\n'
            'required_scopes = ["%s"]\n[auth.api_keys]\n"%s" = "%s"\n'
            % (cls.jwks.url, AUDIENCE, ISSUER, SCOPE, API_KEY_NAME, API_KEY))
        cls.server = harness.Server(config=config, binary=harness.TEST_BINARY, env=cls.ca.env())
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.tmp.cleanup()
        cls.jwks.close()
        cls.ca.cleanup()
        cls.server.check_sanitizers()

    def test_every_algorithm_from_the_jwks_is_accepted(self):
        with self.server.channel() as ch:
            for alg, key in self.keys.items():
                resp, _ = sleep_call(ch, bearer(key.token(good_claims())))
                self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING, alg)
            # Without kid: selected by alg (exactly one key of each alg here).
            resp, _ = sleep_call(ch, bearer(self.keys["EdDSA"].token(good_claims(),
                                                                     with_kid=False)))
            self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING)
        # verifies: OPS-005 — the key set was loaded before SERVING; xmtp_auth_keys counts it.
        self.assertEqual(harness.metric(self.server, "xmtp_auth_keys"), 4)

    # verifies: AUTH-002, CONF-010, CONF-068
    def test_public_paths_need_no_credential(self):
        with self.server.channel() as ch:
            resp, _ = harness.unary(ch, HEALTH_CHECK, health_pb2.HealthCheckRequest(),
                                    health_pb2.HealthCheckResponse,
                                    metadata=(("authorization", "Basic garbage"),))
            self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING)
            conf, _ = harness.unary(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                                    backend_pb2.GetConfigurationResponse)
        self.assertTrue(conf.auth.enabled)
        self.assertEqual([(k.kid, k.alg) for k in conf.auth.keys],
                         [("rsa-1", "RS256"), ("p256-1", "ES256"), ("p384-1", "ES384"),
                          ("ed-1", "EdDSA")])
        self.assertEqual(list(conf.auth.required_scopes), [SCOPE])

    # verifies: AUTH-001 — unknown paths need a credential; with one they are UNIMPLEMENTED.
    def test_unknown_path(self):
        with self.server.channel() as ch:
            for metadata, code in ((None, UNAUTHENTICATED),
                                   (bearer(API_KEY), grpc.StatusCode.UNIMPLEMENTED)):
                with self.assertRaises(grpc.RpcError) as ctx:
                    harness.raw_unary(ch, "/no.such.Service/Method", b"") if metadata is None else \
                        ch.unary_unary("/no.such.Service/Method")(b"", metadata=metadata,
                                                                    timeout=10)
                self.assertEqual(ctx.exception.code(), code)

    # verifies: AUTH-014 (missing)
    def test_missing(self):
        self.assert_rejected(self.server, None, UNAUTHENTICATED, "missing bearer token", "missing")

    # verifies: AUTH-005, AUTH-014 (malformed, header)
    def test_malformed_header(self):
        # (HTTP/2 refuses a field value that ends in whitespace before it reaches the backend.)
        for value in ("Basic " + API_KEY, "Bearer", "Bearer:" + API_KEY, API_KEY):
            self.assert_rejected(self.server, (("authorization", value),), UNAUTHENTICATED,
                                 "authorization header is not a bearer token", "malformed",
                                 secrets=(API_KEY,))

    # verifies: AUTH-014 (malformed, token), AUTH-031
    def test_malformed_token(self):
        key = self.keys["ES256"]
        header = jwks_server.b64url(json.dumps({"alg": "ES256", "kid": "p256-1"}).encode())
        for token in ("a" * 40, "a" * 8193, header + ".e30", header + ".W10.c2ln",
                      key.token(good_claims(exp="soon"))):
            self.assert_rejected(self.server, bearer(token), UNAUTHENTICATED,
                                 "token is not a supported JWT", "malformed")

    # verifies: AUTH-008
    def test_unsupported_alg(self):
        for alg in ("none", "HS256", "ES512", "PS256"):
            head = jwks_server.b64url(json.dumps({"alg": alg, "kid": "p256-1"}).encode())
            claims = jwks_server.b64url(json.dumps(good_claims()).encode())
            self.assert_rejected(self.server, bearer(head + "." + claims + ".c2ln"),
                                 UNAUTHENTICATED, "token is not a supported JWT",
                                 "unsupported_alg")

    # verifies: AUTH-009, AUTH-010 (untrusted)
    def test_untrusted(self):
        impostor = jwks_server.SigningKey("ES256", "p256-1")  # same kid, another key
        unknown_kid = jwks_server.SigningKey("ES256", "p256-9")
        wrong_alg_for_kid = jwks_server.SigningKey("ES384", "p256-1")
        for token in (impostor.token(good_claims()), unknown_kid.token(good_claims()),
                      wrong_alg_for_kid.token(good_claims()),
                      impostor.token(good_claims(exp=1))):  # signature before claims
            self.assert_rejected(self.server, bearer(token), UNAUTHENTICATED,
                                 "token signature is not trusted", "untrusted",
                                 secrets=(token,))

    # verifies: AUTH-011 (expired, with the 60 s leeway)
    def test_expired(self):
        now = int(time.time())
        for claims in (good_claims(exp=now - 3600), good_claims(exp=None)):
            token = self.keys["RS256"].token(claims)
            self.assert_rejected(self.server, bearer(token), UNAUTHENTICATED,
                                 "token has expired", "expired", secrets=(token,))
        with self.server.channel() as ch:  # inside the leeway
            sleep_call(ch, bearer(self.keys["RS256"].token(good_claims(exp=now - 20))))

    # verifies: AUTH-011 (not_yet_valid)
    def test_not_yet_valid(self):
        token = self.keys["ES384"].token(good_claims(nbf=int(time.time()) + 3600))
        self.assert_rejected(self.server, bearer(token), UNAUTHENTICATED,
                             "token is not yet valid", "not_yet_valid")

    # verifies: AUTH-012 (audience)
    def test_audience(self):
        for aud in ("someone-else", ["a", "b"], None):
            token = self.keys["EdDSA"].token(good_claims(aud=aud))
            self.assert_rejected(self.server, bearer(token), UNAUTHENTICATED,
                                 "token audience is not allowed", "audience")

    # verifies: AUTH-012 (issuer)
    def test_issuer(self):
        token = self.keys["EdDSA"].token(good_claims(iss="https://elsewhere.test"))
        self.assert_rejected(self.server, bearer(token), UNAUTHENTICATED,
                             "token issuer is not allowed", "issuer",
                             secrets=("elsewhere.test", "subject-value-never-logged"))

    # verifies: AUTH-013 (scope: PERMISSION_DENIED)
    def test_scope(self):
        token = self.keys["ES256"].token(good_claims(scope="other"))
        self.assert_rejected(self.server, bearer(token), grpc.StatusCode.PERMISSION_DENIED,
                             "token is missing a required scope", "scope")

    # verifies: AUTH-004 (streams are checked at open)
    def test_stream_open_needs_a_credential(self):
        with self.server.channel() as ch:
            stream = ch.unary_stream("/xmtp.backend.v1.SubscriptionService/SubscribeStatic",
                                     request_serializer=lambda m: m.SerializeToString(),
                                     response_deserializer=lambda b: b)
            with self.assertRaises(grpc.RpcError) as ctx:
                list(stream(backend_pb2.SubscribeStaticRequest(), timeout=10))
            self.assertEqual(ctx.exception.code(), UNAUTHENTICATED)
            self.assertEqual(ctx.exception.details(), "missing bearer token")

    # verifies: AUTH section 6.2 — the rejection in the request's own protocol (gRPC-Web), and a
    # request that is not gRPC at all still needs a credential (AUTH-001).
    def test_grpc_web_and_non_grpc_requests(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        conn.request("POST", SLEEP, body=harness.frame(b""),
                     headers={"content-type": "application/grpc-web+proto"})
        resp = conn.getresponse()
        body = resp.read()
        status = resp.getheader("grpc-status")
        if status is None:
            status = harness.parse_trailer_block(harness.grpc_web_frames(body)[-1][1])[
                "grpc-status"]
        self.assertEqual(status, "16")
        self.assertRegex(resp.getheader("x-request-id"), harness.UUID_RE)
        conn.request("GET", "/anything")
        resp = conn.getresponse()
        resp.read()
        self.assertEqual(resp.status, 401)
        self.assertEqual(resp.getheader("grpc-status"), "16")
        conn.request("GET", "/anything", headers={"authorization": "Bearer " + API_KEY})
        resp = conn.getresponse()
        resp.read()
        self.assertEqual(resp.status, 405)
        # An OPTIONS without Origin/Access-Control-Request-Method is not a preflight.
        conn.request("OPTIONS", SLEEP)
        resp = conn.getresponse()
        resp.read()
        self.assertEqual(resp.status, 401)
        conn.close()

    # verifies: AUTH-027 — the JWKS URL beyond its host never reaches the log.
    def test_log_names_no_token_or_url(self):
        text = "".join(self.server.lines)
        self.assertNotIn(".well-known", text)
        self.assertNotIn(API_KEY, text)


class ApiKeyTest(AuthCase):
    """API keys only (no JWT source)."""

    @classmethod
    def setUpClass(cls):
        config = auth_config('[auth]\nenabled = true\n[auth.api_keys]\n"%s" = "%s"\nother = "%s"\n'
                             % (API_KEY_NAME, API_KEY, "o" * 64))
        cls.server = harness.Server(config=config, binary=harness.TEST_BINARY)
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.tmp.cleanup()
        cls.server.check_sanitizers()

    # verifies: AUTH-006
    def test_good_key_is_admitted(self):
        with self.server.channel() as ch:
            for scheme in ("Bearer ", "bearer ", "BEARER  "):
                resp, _ = sleep_call(ch, (("authorization", scheme + API_KEY),))
                self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING)
            resp, _ = sleep_call(ch, bearer("o" * 64))
            self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING)
        self.assertEqual(harness.metric(self.server, "xmtp_auth_keys"), 0)

    # verifies: AUTH-007 — no JWT source: a miss is untrusted, even for a JWT-shaped token.
    def test_wrong_key_is_untrusted(self):
        key = jwks_server.SigningKey("ES256", "k")
        for token in (API_KEY[:-1] + "y", API_KEY + "x", key.token(good_claims())):
            self.assert_rejected(self.server, bearer(token), UNAUTHENTICATED,
                                 "token signature is not trusted", "untrusted",
                                 secrets=(API_KEY, token))

    # verifies: AUTH-027, AUTH-028 — the key value never appears in telemetry.
    def test_key_value_never_recorded(self):
        with self.server.channel() as ch:
            sleep_call(ch, bearer(API_KEY))
        self.assertNotIn(API_KEY, "".join(self.server.lines))
        self.assertNotIn(API_KEY, harness.scrape(self.server))
        self.assertNotIn(API_KEY, self.server.stderr_text)


class PrincipalSpanTest(unittest.TestCase):
    # verifies: AUTH-028 — an admitting API key's name is auth.principal on the request span; the
    # key value appears nowhere in the exported spans.
    def test_api_key_name_is_the_request_spans_principal(self):
        with otlp_receiver.Receiver() as receiver:
            config = auth_config('[auth]\nenabled = true\n[auth.api_keys]\n"%s" = "%s"\n'
                                 % (API_KEY_NAME, API_KEY)).replace(
                "[telemetry]\n",
                '[telemetry]\notlp_endpoint = "%s"\nsample_ratio = 1.0\n' % receiver.endpoint)
            with harness.Server(config=config) as server:
                with server.channel() as ch:
                    harness.unary(ch, "/xmtp.backend.v1.QueryService/QueryNewest",
                                  backend_pb2.QueryNewestRequest(topics=[backend_pb2.Topic(
                                      topic=b"\x00" + b"g" * 16)]),
                                  backend_pb2.QueryNewestResponse, metadata=bearer(API_KEY))
                spans = receiver.wait_spans(
                    lambda s: [x for x in s
                               if x.name == "xmtp.backend.v1.QueryService/QueryNewest"],
                    20, "the request span")
        attrs = {kv.key: kv.value.string_value for kv in spans[0].attributes}
        self.assertEqual(attrs.get("auth.principal"), API_KEY_NAME)
        self.assertNotIn(API_KEY.encode(), b"".join(
            s.SerializeToString() for _, s in receiver.spans()))


class InlineKeysTest(AuthCase):
    # verifies: AUTH-017 (inline keys), RS512 and ES256 from PEM, published kid/alg (CONF-068)
    def test_inline_keys(self):
        rs512 = jwks_server.SigningKey("RS512", "inline-rsa")
        es256 = jwks_server.SigningKey("ES256", "inline-ec")
        entries = "".join('[[auth.keys]]\nkid = "%s"\nalg = "%s"\npublic_key = """%s"""\n'
                          % (k.kid, k.alg, k.public_pem()) for k in (rs512, es256))
        config = auth_config("[auth]\nenabled = true\n" + entries)
        with harness.Server(config=config, binary=harness.TEST_BINARY) as server:
            with server.channel() as ch:
                for key in (rs512, es256):
                    resp, _ = sleep_call(ch, bearer(key.token({"exp": int(time.time()) + 60})))
                    self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING)
                conf, _ = harness.unary(ch, GET_CONFIGURATION,
                                        backend_pb2.GetConfigurationRequest(),
                                        backend_pb2.GetConfigurationResponse)
            self.assertEqual([(k.kid, k.alg) for k in conf.auth.keys],
                             [("inline-rsa", "RS512"), ("inline-ec", "ES256")])
            self.assert_rejected(server, bearer(rs512.token({"exp": 1})), UNAUTHENTICATED,
                                 "token has expired", "expired")


class AuthOffTest(unittest.TestCase):
    # verifies: AUTH-003, CONF-066 — the authorization header is never read; a disabled table is
    # not validated and fetches nothing.
    def test_malformed_header_changes_nothing(self):
        config = harness.minimal_config() + (
            '[auth]\nenabled = false\njwks_url = "https://unreachable.invalid/jwks"\n')
        with harness.Server(config=config, binary=harness.TEST_BINARY) as server:
            with server.channel() as ch:
                for metadata in (None, (("authorization", "Basic nonsense"),),
                                 (("authorization", "Bearer " + "x" * 9000),),
                                 (("authorization", "Bearer not.a.jwt"),)):
                    resp, _ = sleep_call(ch, metadata)
                    self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING)
            self.assertNotIn("xmtp_auth_rejections_total{", harness.scrape(server))


class DrainAuthTest(unittest.TestCase):
    # verifies: OPS-007 — during a drain a bad credential still gets its auth status, a good one
    # gets UNAVAILABLE, and a CORS preflight is still answered.
    def test_auth_runs_before_drain_admission(self):
        config = auth_config('[auth]\nenabled = true\n[auth.api_keys]\n"%s" = "%s"\n'
                             % (API_KEY_NAME, API_KEY), extra_server="max_drain_duration_ms = 4000\n")
        with harness.Server(config=config, binary=harness.TEST_BINARY) as server:
            ch = server.channel()
            results = {}

            def slow():
                try:
                    sleep_call(ch, bearer(API_KEY), ms=20000, timeout=30)
                    results["slow"] = "ok"
                except grpc.RpcError as e:
                    results["slow"] = e.code()
            thread = threading.Thread(target=slow)
            thread.start()
            harness.wait_for(lambda: harness.metric(server, "grpc_server_in_flight",
                                            'grpc_service="unknown",grpc_method="unknown",'
                                            'grpc_type="unary"') >= 1, 10, "the slow call")
            server.terminate()

            def draining():
                try:
                    sleep_call(ch, bearer(API_KEY))
                    return False
                except grpc.RpcError as e:
                    return e.code() == grpc.StatusCode.UNAVAILABLE
            harness.wait_for(draining, 5, "drain admission")
            for metadata, message in ((bearer("nope" * 10), "token signature is not trusted"),
                                      (None, "missing bearer token")):
                with self.assertRaises(grpc.RpcError) as ctx:
                    sleep_call(ch, metadata)
                self.assertEqual(ctx.exception.code(), UNAUTHENTICATED)
                self.assertEqual(ctx.exception.details(), message)
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            conn.request("OPTIONS", SLEEP, headers={"origin": "https://app.example",
                                                    "access-control-request-method": "POST"})
            resp = conn.getresponse()
            resp.read()
            conn.close()
            self.assertEqual(resp.status, 204)
            self.assertEqual(resp.getheader("access-control-allow-origin"), "*")
            thread.join(15)
            self.assertEqual(results["slow"], grpc.StatusCode.UNAVAILABLE)
            self.assertEqual(server.wait(timeout=15), 0)
            ch.close()


class JwksRefreshTest(AuthCase):
    """Plain-HTTP loopback JWKS with a 1 s refresh and the smallest stale window it allows
    (1 + 1 + 10 = 12 s, AUTH-034)."""

    STALE = 12

    def start(self, jwks, binary=None):
        config = auth_config('[auth]\nenabled = true\njwks_url = "%s"\njwks_refresh_seconds = 1\n'
                             'jwks_max_stale_seconds = %d\n' % (jwks.url, self.STALE),
                             extra_server="max_drain_duration_ms = 2000\n")
        return harness.Server(config=config, binary=binary or harness.TEST_BINARY)

    def refreshes(self, server, result):
        return harness.metric(server, "xmtp_auth_jwks_refresh_total", 'result="%s"' % result)

    # verifies: AUTH-018 — a refresh replaces the whole set: a withdrawn key stops verifying, a
    # new one starts.
    def test_refresh_replaces_the_key_set(self):
        old = jwks_server.SigningKey("ES256", "old")
        new = jwks_server.SigningKey("EdDSA", "new")
        jwks = jwks_server.JwksServer([old])
        try:
            with self.start(jwks) as server:
                with server.channel() as ch:
                    sleep_call(ch, bearer(old.token({"exp": int(time.time()) + 600})))
                    jwks.set(keys=[new])
                    ok = self.refreshes(server, "ok")
                    harness.wait_for(lambda: self.refreshes(server, "ok") >= ok + 2, 10,
                                     "a refresh with the new set")
                    sleep_call(ch, bearer(new.token({"exp": int(time.time()) + 600})))
                self.assert_rejected(server, bearer(old.token({"exp": int(time.time()) + 600})),
                                     UNAUTHENTICATED, "token signature is not trusted",
                                     "untrusted")
        finally:
            jwks.close()

    # verifies: AUTH-018 — an outage shorter than the stale limit keeps serving on the last set.
    def test_short_outage_keeps_serving(self):
        key = jwks_server.SigningKey("ES256", "k")
        jwks = jwks_server.JwksServer([key])
        try:
            with self.start(jwks) as server:
                jwks.set(status=503)
                outage_start = time.monotonic()
                harness.wait_for(lambda: self.refreshes(server, "error") >= 3, 15,
                                 "failed refreshes")
                with server.channel() as ch:  # the last good set is in force
                    sleep_call(ch, bearer(key.token({"exp": int(time.time()) + 600})))
                jwks.set(status=200)
                ok = self.refreshes(server, "ok")
                # Good refreshes until well past the point where the outage, had it lasted,
                # would have made the set stale.
                harness.wait_for(lambda: self.refreshes(server, "ok") >= ok + 1 and
                                 time.monotonic() - outage_start > self.STALE + 2, 30,
                                 "good refreshes past the stale window")
                self.assertIsNone(server.proc.poll())
                with server.channel() as ch:
                    resp, _ = harness.unary(ch, HEALTH_CHECK, health_pb2.HealthCheckRequest(),
                                            health_pb2.HealthCheckResponse)
                    self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING)
                    sleep_call(ch, bearer(key.token({"exp": int(time.time()) + 600})))
        finally:
            jwks.close()

    # verifies: AUTH-019 — no good fetch for the stale limit: NOT_SERVING, drain, exit non-zero.
    def test_outage_past_the_stale_limit_drains_and_exits(self):
        key = jwks_server.SigningKey("EdDSA", "k")
        jwks = jwks_server.JwksServer([key])
        try:
            with self.start(jwks) as server:
                statuses = []
                ch = server.channel()
                watch = ch.unary_stream("/grpc.health.v1.Health/Watch",
                                        request_serializer=lambda m: m.SerializeToString(),
                                        response_deserializer=health_pb2.HealthCheckResponse.FromString)
                responses = watch(health_pb2.HealthCheckRequest(), timeout=60)

                def read():
                    try:
                        for r in responses:
                            statuses.append(r.status)
                    except grpc.RpcError:
                        pass
                reader = threading.Thread(target=read)
                reader.start()
                harness.wait_for(lambda: statuses, 10, "the first health status")
                jwks.set(status=500)
                started = time.monotonic()
                code = server.wait(timeout=self.STALE + 2 + 5 + 10)
                elapsed = time.monotonic() - started
                reader.join(10)
                ch.close()
                self.assertNotEqual(code, 0)
                self.assertGreater(elapsed, self.STALE - 2)
                self.assertEqual(statuses[0], health_pb2.HealthCheckResponse.SERVING)
                self.assertIn(health_pb2.HealthCheckResponse.NOT_SERVING, statuses)
                stale = [r for r in server.log_records()
                         if r.get("msg") == "JWKS key set is stale; draining"]
                self.assertEqual(len(stale), 1)
                self.assertEqual(stale[0].get("host"), "127.0.0.1")
                self.assertNotIn(".well-known", "".join(server.lines))
        finally:
            jwks.close()


class JwksStartupTest(unittest.TestCase):
    # verifies: AUTH-017 (JWKS) — 3 attempts, then startup fails naming auth.jwks_url and the
    # host only.
    def test_no_usable_key_stops_startup(self):
        jwks = jwks_server.JwksServer([jwks_server.SigningKey("ES256", "k")])
        jwks.set(status=500)
        try:
            data = harness.private_data_dir(self)
            config = harness.minimal_config().replace("{data}", data) + (
                '[auth]\nenabled = true\njwks_url = "%s"\n' % jwks.url)
            result = harness.run_binary(["--config", config], timeout=30)
            self.assertNotEqual(result.returncode, 0)
            self.assertIn("auth.jwks_url", result.stderr)
            self.assertIn("127.0.0.1", result.stderr)
            self.assertNotIn(".well-known", result.stderr + result.stdout)
            self.assertEqual(jwks.request_count(), 3)
        finally:
            jwks.close()

    # verifies: AUTH-015 — HTTPS is verified: a server whose CA the backend does not trust
    # yields no key set.
    def test_untrusted_tls_certificate_stops_startup(self):
        ca = jwks_server.TestCa()
        jwks = jwks_server.JwksServer([jwks_server.SigningKey("ES256", "k")], ca=ca)
        try:
            data = harness.private_data_dir(self)
            config = harness.minimal_config().replace("{data}", data) + (
                '[auth]\nenabled = true\njwks_url = "%s"\n' % jwks.url)
            result = harness.run_binary(["--config", config], timeout=30)
            self.assertNotEqual(result.returncode, 0)
            self.assertIn("auth.jwks_url", result.stderr)
            self.assertEqual(jwks.request_count(), 0)
        finally:
            jwks.close()
            ca.cleanup()


if __name__ == "__main__":
    unittest.main()
