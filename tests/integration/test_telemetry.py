"""Operator telemetry from outside the process (OPS section 5): the metric catalogue as exposed
and as scraped by a real Prometheus server, traces and log records exported to receivers in this
harness over OTLP/gRPC (the default) and OTLP/HTTP (telemetry.otlp_protocol = "http/protobuf"),
export failures, and nothing private in metrics, spans or logs."""
import base64
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request
import uuid

import grpc

import envelopes as E
import harness
import identity_updates as U
import health_pb2
import otlp_receiver
import stream_client
from xmtp.backend.v1 import backend_pb2

PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
QUERY = "/xmtp.backend.v1.QueryService/Query"
NEWEST = "/xmtp.backend.v1.QueryService/QueryNewest"
GET_CONFIGURATION = "/xmtp.backend.v1.ConfigurationService/GetConfiguration"

# ---- The catalogue of OPS section 5, transcribed once -------------------------------------------

ROUTES = [  # (grpc_service, grpc_method, grpc_type)
    ("xmtp.backend.v1.QueryService", "Query", "unary"),
    ("xmtp.backend.v1.QueryService", "QueryNewest", "unary"),
    ("xmtp.backend.v1.PublishService", "Publish", "unary"),
    ("xmtp.backend.v1.SubscriptionService", "Subscribe", "bidi_stream"),
    ("xmtp.backend.v1.SubscriptionService", "SubscribeStatic", "server_stream"),
    ("xmtp.backend.v1.IdentityService", "GetInboxIds", "unary"),
    ("xmtp.backend.v1.IdentityService", "VerifySmartContractWalletSignatures", "unary"),
    ("xmtp.backend.v1.ConfigurationService", "GetConfiguration", "unary"),
    ("xmtp.backend.v1.NotificationService", "Register", "unary"),
    ("xmtp.backend.v1.NotificationService", "Unregister", "unary"),
    ("xmtp.backend.v1.NotificationService", "UpdateSubscriptions", "unary"),
    ("xmtp.backend.v1.AttachmentService", "CreateUpload", "unary"),
    # Our extension for the V3 API (issue 33, docs/v3-api.md), rows added as methods are served.
    ("xmtp.identity.api.v1.IdentityApi", "GetInboxIds", "unary"),
    ("xmtp.identity.api.v1.IdentityApi", "VerifySmartContractWalletSignatures", "unary"),
    ("xmtp.identity.api.v1.IdentityApi", "PublishIdentityUpdate", "unary"),
    ("xmtp.mls.api.v1.MlsApi", "SendGroupMessages", "unary"),
    ("xmtp.mls.api.v1.MlsApi", "UploadKeyPackage", "unary"),
    ("xmtp.identity.api.v1.IdentityApi", "GetIdentityUpdates", "unary"),
    ("xmtp.mls.api.v1.MlsApi", "SendWelcomeMessages", "unary"),
    ("xmtp.mls.api.v1.MlsApi", "RegisterInstallation", "unary"),
    ("xmtp.mls.api.v1.MlsApi", "FetchKeyPackages", "unary"),
    ("xmtp.mls.api.v1.MlsApi", "RevokeInstallation", "unary"),
    ("xmtp.mls.api.v1.MlsApi", "GetIdentityUpdates", "unary"),
    ("xmtp.mls.api.v1.MlsApi", "QueryGroupMessages", "unary"),
    ("xmtp.mls.api.v1.MlsApi", "QueryWelcomeMessages", "unary"),
    ("xmtp.mls.api.v1.MlsApi", "BatchPublishCommitLog", "unary"),
    ("xmtp.mls.api.v1.MlsApi", "BatchQueryCommitLog", "unary"),
    ("xmtp.mls.api.v1.MlsApi", "GetNewestGroupMessage", "unary"),
    ("xmtp.mls.api.v1.MlsApi", "SubscribeGroupMessages", "server_stream"),
    ("xmtp.mls.api.v1.MlsApi", "SubscribeWelcomeMessages", "server_stream"),
    ("xmtp.mls.api.v1.MlsApi", "Subscribe", "bidi_stream"),
    ("grpc.health.v1.Health", "Check", "unary"),
    ("grpc.health.v1.Health", "Watch", "unary"),
    ("grpc.health.v1.Health", "List", "unary"),
    ("unknown", "unknown", "unary"),
]
GRPC_CODES = ["OK", "Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
              "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
              "Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss",
              "Unauthenticated"]
SPAN_NAMES = (["%s/%s" % (s, m) for s, m, _ in ROUTES] + [
    "rpc.publish", "rpc.query", "rpc.query_newest", "rpc.get_inbox_ids",
    "rpc.verify_smart_contract_wallet_signatures", "rpc.get_configuration", "rpc.register",
    "rpc.unregister", "rpc.update_subscriptions", "rpc.create_upload",
    "publish.parse_publish", "publish.validate_publish", "publish.locks", "db.commit_publish",
    "tailer.bootstrap", "tailer.poll", "stream.fetch", "stream.update", "scw.verify"])
RPC = "RPC"
CODE = ("grpc_code", GRPC_CODES)
BUCKETS = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"]

# name: (type, [labels: RPC or (label, vocabulary)], failure_only)
# Our extension families (docs/telemetry.md, "Extension metrics"): not in the OPS catalogue, named
# xmtp_*, their labels from fixed vocabularies. Name -> type.
EXTENSIONS = {
    "xmtp_net_accept_failures_total": "counter",
    "xmtp_net_connections": "gauge",
    "xmtp_net_connections_closed_total": "counter",
    "xmtp_db_failures_total": "counter",
    "xmtp_log_lines_suppressed_total": "counter",
    "xmtp_ext_prune_envelopes_total": "counter",  # issue 35, always present
    "xmtp_ext_prune_pass_seconds": "histogram",
}

CATALOGUE = {
    "grpc_server_started_total": ("counter", [RPC], False),
    "grpc_server_handled_total": ("counter", [RPC, CODE], False),
    "grpc_server_handling_seconds": ("histogram", [RPC, CODE], False),
    "grpc_server_in_flight": ("gauge", [RPC], False),
    "grpc_server_request_bytes_total": ("counter", [RPC], False),
    "grpc_server_response_bytes_total": ("counter", [RPC], False),
    "xmtp_operation_duration_seconds": (
        "histogram", [("operation", SPAN_NAMES), ("status", ["ok", "error"])], False),
    "xmtp_telemetry_export_failures_total": ("counter", [], True),
    "xmtp_db_released_open_transactions_total": ("counter", [], True),
    "xmtp_db_errors_total": (
        "counter", [("kind", ["timeout", "invariant", "connection", "other"])], True),
    "xmtp_publish_envelopes_total": (
        "counter", [("outcome", ["stored", "duplicate", "rejected"])], False),
    "xmtp_publish_rejections_total": ("counter", [("reason", [
        "REASON_MALFORMED_PAYLOAD", "REASON_INVALID_KEY_PACKAGE", "REASON_INVALID_IDENTITY_UPDATE",
        "REASON_INVALID_SIGNATURE", "REASON_TOO_LARGE", "REASON_HANDLE_TAKEN",
        "REASON_HANDLE_NOT_ALLOWED", "REASON_HANDLE_TOO_SOON"])], True),
    "xmtp_scw_verifications_total": ("counter", [("result", ["valid", "invalid", "error"])], False),
    "xmtp_stream_sessions": ("gauge", [("kind", ["bidi", "static"])], False),
    "xmtp_stream_topics_registered": ("gauge", [], False),
    "xmtp_stream_frames_sent_total": ("counter", [("frame", [
        "started", "applied", "messages", "keepalive", "ping", "pong", "update"])], False),
    "xmtp_stream_frames_received_total": ("counter", [("frame", ["update", "ping", "pong"])],
                                          False),
    "xmtp_stream_envelopes_sent_total": ("counter", [("phase", ["catch_up", "live"])], False),
    "xmtp_stream_updates_total": ("counter", [("outcome", ["applied", "invalid", "rate_limited"])],
                                  False),
    "xmtp_stream_ended_total": ("counter", [("reason", [
        "client", "backpressure", "capacity", "keepalive", "tailer", "database", "shutdown",
        "invalid", "rate_limited"])], False),
    "xmtp_stream_outbound_wait_seconds": ("histogram", [], False),
    "xmtp_stream_fetch_wait_seconds": ("histogram", [], False),
    "xmtp_tailer_polls_total": ("counter", [("result", ["ok", "error"])], False),
    "xmtp_tailer_rows_total": ("counter", [("source", ["forward", "gap"])], False),
    "xmtp_tailer_gap_ranges": ("gauge", [], False),
    "xmtp_tailer_restarts_total": ("counter", [], False),
    "xmtp_tailer_ready": ("gauge", [], False),
    "xmtp_boundary_advances_total": ("counter", [("result", ["ok", "lock_timeout", "error"])],
                                     False),
    "xmtp_backend_ready": ("gauge", [], False),
    "xmtp_auth_rejections_total": ("counter", [("reason", [
        "missing", "malformed", "unsupported_alg", "untrusted", "expired", "not_yet_valid",
        "audience", "issuer", "scope"])], True),
    "xmtp_auth_jwks_refresh_total": ("counter", [("result", ["ok", "error"])], False),
    "xmtp_auth_keys": ("gauge", [], False),
    "xmtp_push_recipients_total": ("counter", [("action", [
        "registered", "unregistered", "expired", "dead"])], False),
    "xmtp_push_deliveries_total": ("counter", [
        ("channel", ["apns", "fcm", "http"]),
        ("outcome", ["delivered", "failed", "rejected", "mismatch", "dead", "suppressed"])], False),
    "xmtp_push_dispatcher": ("gauge", [], False),
    "xmtp_push_subscriptions_total": ("counter", [("action", ["added", "removed"])], False),
    "xmtp_backend_info": ("gauge", [("version", None)], False),  # None: the build version
}

# ---- Helpers ------------------------------------------------------------------------------------

SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text):
    """{family: {"type": t, "help": bool, "samples": [(sample name, {labels}, value)]}}."""
    families = {}
    current = None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            families.setdefault(name, {"type": None, "help": False, "samples": []})["help"] = True
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            families.setdefault(name, {"type": None, "help": False, "samples": []})["type"] = kind
            current = name
        elif line and not line.startswith("#"):
            m = SAMPLE_RE.match(line)
            assert m, "unparseable sample line: " + line
            labels = dict(LABEL_RE.findall(m.group(2) or ""))
            families[current]["samples"].append((m.group(1), labels, float(m.group(3))))
    return families


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def traced_config(endpoint, ratio="1.0", logs=False, protocol=None):
    """Export to `endpoint`; `protocol` None leaves telemetry.otlp_protocol at its default."""
    return harness.minimal_config().replace(
        "[telemetry]\n",
        '[telemetry]\notlp_endpoint = "%s"\nsample_ratio = %s\nservice_name = "xb-under-test"\n'
        'otlp_logs = %s\n%s' % (endpoint, ratio, "true" if logs else "false",
                                 'otlp_protocol = "%s"\n' % protocol if protocol else ""))


def call(channel, path, request, response_type, metadata=None):
    return harness.unary(channel, path, request, response_type, metadata=metadata)


def drive_traffic(server, metadata=None, group=None, inbox_nonce=None, installation_key=None,
                  payload=b"ciphertext", cursor=0):
    """Requests of every kind the backend serves today: publish (stored, duplicate, rejected),
    Query, QueryNewest, GetConfiguration, an unknown path, Subscribe (update, ping) and
    SubscribeStatic, with `metadata` on each."""
    group = group or uuid.uuid4().bytes
    # A valid registration (identity updates are verified at publish); its inbox id derives from
    # the wallet and the nonce.
    _, registration = U.registration(inbox_nonce or int.from_bytes(uuid.uuid4().bytes[:8], "big"))
    installation_key = installation_key or uuid.uuid4().bytes * 2
    gtopic = E.group_topic(group)
    envs = [E.group_message(group, ciphertext=payload), E.welcome(installation_key, data=payload),
            E.commit_log(group), U.envelope(registration)]
    with server.channel() as ch:
        call(ch, PUBLISH, backend_pb2.PublishRequest(envelopes=envs), backend_pb2.PublishResponse,
             metadata)
        call(ch, PUBLISH, backend_pb2.PublishRequest(envelopes=envs[:1]),
             backend_pb2.PublishResponse, metadata)  # a duplicate
        bad = backend_pb2.ClientEnvelope(group_message=backend_pb2.GroupMessage(data=payload))
        try:
            call(ch, PUBLISH, backend_pb2.PublishRequest(envelopes=[bad]),
                 backend_pb2.PublishResponse, metadata)
        except grpc.RpcError:
            pass
        q = backend_pb2.QueryRequest()
        item = q.queries.add()
        item.topic.topic = gtopic
        item.cursor.sequence_id = cursor
        call(ch, QUERY, q, backend_pb2.QueryResponse, metadata)
        call(ch, NEWEST, backend_pb2.QueryNewestRequest(topics=[backend_pb2.Topic(topic=gtopic)]),
             backend_pb2.QueryNewestResponse, metadata)
        call(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
             backend_pb2.GetConfigurationResponse, metadata)
        call(ch, "/grpc.health.v1.Health/Check", health_pb2.HealthCheckRequest(),
             health_pb2.HealthCheckResponse, metadata)
        try:
            harness.raw_unary(ch, "/not.a.Service/" + group.hex(), b"")
        except grpc.RpcError:
            pass
        bidi = stream_client.Bidi(ch, metadata=metadata)
        bidi.update(1, adds=[(gtopic, cursor)])
        bidi.ping(7)
        frames = []
        while not any(f.WhichOneof("response") == "pong" for f in frames):
            frames.append(bidi.frame())
        bidi.close()
        bidi.until_end()
        static = stream_client.Static(ch, [(gtopic, cursor)], metadata=metadata)
        static.started(unittest.TestCase())
        static.cancel()


# ---- Metric catalogue ----------------------------------------------------------------------------

class CatalogueTest(harness.ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        drive_traffic(cls.server)

    def check_family(self, name, family):
        kind, labels, _ = CATALOGUE[name]
        self.assertEqual(family["type"], kind, name)
        self.assertTrue(family["help"], name)
        expected = {}
        for label in labels:
            if label == RPC:
                expected.update({"grpc_service": None, "grpc_method": None, "grpc_type": None})
            else:
                expected[label[0]] = label[1]
        suffixes = ["_bucket", "_sum", "_count"] if kind == "histogram" else [""]
        for sample, values, _ in family["samples"]:
            self.assertIn(sample, [name + s for s in suffixes], sample)
            names = set(values)
            want = set(expected) | ({"le"} if sample.endswith("_bucket") else set())
            self.assertEqual(names, want, "%s labels" % sample)
            if RPC in labels:
                self.assertIn((values["grpc_service"], values["grpc_method"],
                               values["grpc_type"]), ROUTES, sample)
            for label, vocab in expected.items():
                if vocab is not None:
                    self.assertIn(values[label], vocab, "%s %s" % (sample, label))
            if sample.endswith("_bucket"):
                self.assertIn(values["le"], BUCKETS, sample)
        if kind == "histogram":
            series = {}
            for sample, values, _ in family["samples"]:
                if sample.endswith("_bucket"):
                    key = tuple(sorted((k, v) for k, v in values.items() if k != "le"))
                    series.setdefault(key, []).append(values["le"])
            for les in series.values():
                self.assertEqual(les, BUCKETS, name)  # exactly the OPS buckets, in order

    # verifies: OPS-016, OPS-017 — every family with its name, type, label names and values.
    def test_exposition_matches_the_catalogue(self):
        families = parse_exposition(harness.scrape(self.server))
        self.assertEqual(set(families) - set(CATALOGUE) - set(EXTENSIONS), set(),
                         "families outside the catalogue and our documented extensions")
        for name, kind in EXTENSIONS.items():
            if name in families:
                self.assertEqual(families[name]["type"], kind, name)
        for name, (kind, labels, failure_only) in CATALOGUE.items():
            if name not in families:
                self.assertTrue(failure_only, "%s is missing" % name)
                continue
            with self.subTest(family=name):
                self.check_family(name, families[name])
        # Failure-only families with no event are absent; this traffic caused a rejection.
        for absent in ("xmtp_telemetry_export_failures_total", "xmtp_db_errors_total",
                       "xmtp_auth_rejections_total", "xmtp_db_released_open_transactions_total"):
            self.assertNotIn(absent, families)
        self.assertIn("xmtp_publish_rejections_total", families)

    def test_traffic_reached_the_families_it_drives(self):
        families = parse_exposition(harness.scrape(self.server))

        def value(name, **labels):
            for sample, values, v in families[name]["samples"]:
                if sample == name and all(values.get(k) == w for k, w in labels.items()):
                    return v
            return None

        self.assertGreaterEqual(value("xmtp_publish_envelopes_total", outcome="stored"), 4)
        self.assertGreaterEqual(value("xmtp_publish_envelopes_total", outcome="duplicate"), 1)
        self.assertGreaterEqual(value("xmtp_publish_envelopes_total", outcome="rejected"), 1)
        self.assertGreaterEqual(
            value("xmtp_publish_rejections_total", reason="REASON_MALFORMED_PAYLOAD"), 1)
        self.assertGreaterEqual(value("xmtp_stream_frames_received_total", frame="ping"), 1)
        self.assertGreaterEqual(value("xmtp_stream_frames_sent_total", frame="pong"), 1)
        self.assertGreaterEqual(value("xmtp_stream_updates_total", outcome="applied"), 1)
        self.assertGreaterEqual(value("xmtp_stream_ended_total", reason="client"), 1)
        self.assertGreaterEqual(value("xmtp_tailer_polls_total", result="ok"), 1)
        self.assertEqual(value("xmtp_tailer_ready"), 1)
        self.assertEqual(value("xmtp_backend_ready"), 1)
        self.assertGreaterEqual(value("xmtp_tailer_restarts_total"), 1)
        info = families["xmtp_backend_info"]["samples"]
        self.assertEqual(len(info), 1)
        self.assertEqual(info[0][2], 1)
        self.assertTrue(info[0][1]["version"])
        # verifies: OPS-019 — the operation histogram carries the request and handler spans even
        # with no OTLP endpoint (metrics never depend on tracing).
        ops = {v["operation"] for s, v, _ in families["xmtp_operation_duration_seconds"]["samples"]}
        for op in ("xmtp.backend.v1.PublishService/Publish", "rpc.publish",
                   "publish.parse_publish", "publish.validate_publish", "publish.locks",
                   "db.commit_publish", "rpc.query", "rpc.query_newest", "rpc.get_configuration",
                   "unknown/unknown", "tailer.bootstrap", "tailer.poll", "stream.fetch",
                   "stream.update", "grpc.health.v1.Health/Check"):
            self.assertIn(op, ops)
        errors = {v["operation"] for s, v, _ in
                  families["xmtp_operation_duration_seconds"]["samples"] if v["status"] == "error"}
        self.assertIn("publish.parse_publish", errors)  # the malformed publish

    def test_promtool_check_metrics_passes(self):
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool (Debian package prometheus) is required")
        result = subprocess.run([promtool, "check", "metrics"], input=harness.scrape(self.server),
                                capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)


# ---- A real Prometheus server scrapes the listener -------------------------------------------------

class PrometheusScrapeTest(harness.ServerTestCase):
    # verifies: OPS-016 — Prometheus scrapes the listener and its query API returns the series.
    def test_prometheus_scrapes_the_catalogue(self):
        binary = shutil.which("prometheus")
        self.assertIsNotNone(binary, "prometheus (Debian package prometheus) is required")
        with self.server.channel() as ch:
            call(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                 backend_pb2.GetConfigurationResponse)
        with tempfile.TemporaryDirectory(prefix="xb-prom-") as tmp:
            config = os.path.join(tmp, "prometheus.yml")
            with open(config, "w") as f:
                f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                        "scrape_configs:\n  - job_name: xb\n    static_configs:\n"
                        "      - targets: ['127.0.0.1:%d']\n" % self.server.metrics_port)
            port = free_port()
            proc = subprocess.Popen(
                [binary, "--config.file=" + config, "--storage.tsdb.path=" + tmp + "/data",
                 "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                api = "http://127.0.0.1:%d/api/v1/query?query=" % port

                def query(expr):
                    try:
                        body = urllib.request.urlopen(api + urllib.parse.quote(expr),
                                                      timeout=5).read()
                    except OSError:
                        return None
                    import json
                    data = json.loads(body)
                    return data["data"]["result"] if data.get("status") == "success" else None

                up = harness.wait_for(lambda: query('up{job="xb"} == 1'), 60, "a first scrape")
                self.assertEqual(len(up), 1)
                info = harness.wait_for(lambda: query("xmtp_backend_info"), 30, "backend_info")
                self.assertEqual(info[0]["value"][1], "1")
                self.assertTrue(info[0]["metric"]["version"])
                started = query('grpc_server_started_total{grpc_method="GetConfiguration"}')
                self.assertEqual(len(started), 1)
                self.assertEqual(started[0]["metric"]["grpc_service"],
                                 "xmtp.backend.v1.ConfigurationService")
                self.assertEqual(started[0]["metric"]["grpc_type"], "unary")
                self.assertGreaterEqual(float(started[0]["value"][1]), 1)
                ready = query("xmtp_backend_ready")
                self.assertEqual(ready[0]["value"][1], "1")
                buckets = query('count(xmtp_operation_duration_seconds_bucket'
                                '{operation="rpc.get_configuration",status="ok"})')
                self.assertEqual(buckets[0]["value"][1], "12")
            finally:
                proc.terminate()
                proc.wait(timeout=30)


# ---- Traces ------------------------------------------------------------------------------------------

CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"


class TraceExportTest(unittest.TestCase):
    # verifies: OPS-012, OPS-013, OPS-019
    def test_spans_are_children_of_the_caller_with_catalogue_names_and_resource(self):
        with otlp_receiver.Receiver() as receiver, \
                harness.Server(config=traced_config(receiver.endpoint)) as server:
            metadata = [("traceparent", "00-%s-%s-01" % (CALLER_TRACE, CALLER_SPAN)),
                        ("tracestate", "congo=t61rcWkgMzE")]
            drive_traffic(server, metadata=metadata)

            def caller_spans(spans):
                mine = [s for s in spans if s.trace_id.hex() == CALLER_TRACE]
                names = {s.name for s in mine}
                want = {"xmtp.backend.v1.PublishService/Publish", "rpc.publish",
                        "publish.parse_publish", "publish.validate_publish", "publish.locks",
                        "db.commit_publish", "xmtp.backend.v1.SubscriptionService/Subscribe",
                        "stream.update", "stream.fetch"}
                return mine if want <= names else None

            mine = receiver.wait_spans(caller_spans, 20, "the caller's spans")
            self.assertTrue(receiver.wait_spans(
                lambda spans: [s for s in spans if s.name == "tailer.poll"], 20, "tailer.poll"))
            by_id = {s.span_id: s for s in mine}
            requests = [s for s in mine if s.name == "xmtp.backend.v1.PublishService/Publish"]
            self.assertEqual(len(requests), 3)  # stored, duplicate, rejected
            for r in requests:
                self.assertEqual(r.parent_span_id.hex(), CALLER_SPAN)
                self.assertEqual(r.kind, r.SPAN_KIND_SERVER)
                self.assertEqual(r.trace_state, "congo=t61rcWkgMzE")
                self.assertEqual(r.flags & 0x301, 0x301)  # sampled, remote parent
                attrs = {kv.key: kv.value for kv in r.attributes}
                # The route is the span's name; rpc.system is the one rpc.* word attribute.
                self.assertEqual(attrs["rpc.system"].string_value, "grpc")
                self.assertNotIn("rpc.service", attrs)
                self.assertNotIn("rpc.method", attrs)
            for handler in [s for s in mine if s.name == "rpc.publish"]:
                self.assertEqual(by_id[handler.parent_span_id].name,
                                 "xmtp.backend.v1.PublishService/Publish")
            for stage in ("publish.parse_publish", "publish.locks", "db.commit_publish"):
                for s in [s for s in mine if s.name == stage]:
                    self.assertEqual(by_id[s.parent_span_id].name, "rpc.publish", stage)
            for s in [s for s in mine if s.name == "stream.update"]:
                self.assertEqual(by_id[s.parent_span_id].name,
                                 "xmtp.backend.v1.SubscriptionService/Subscribe")
            fetch_parents = {by_id[s.parent_span_id].name for s in mine if s.name == "stream.fetch"}
            self.assertEqual(fetch_parents, {"xmtp.backend.v1.SubscriptionService/Subscribe",
                                             "xmtp.backend.v1.SubscriptionService/SubscribeStatic"})
            rejected = [s for s in mine if s.name == "publish.parse_publish" and
                        s.status.code == s.status.STATUS_CODE_ERROR]
            self.assertEqual(len(rejected), 1)
            # Every exported span has a catalogue name (db.* diagnostic spans: none exported) and
            # the resource of OPS-013.
            for attrs, span in receiver.spans():
                self.assertIn(span.name, SPAN_NAMES)
                self.assertEqual(attrs["service.name"], "xb-under-test")
                self.assertEqual(attrs["xmtp.backend.identifier"], "test.local.xmtp")
                self.assertTrue(attrs["service.version"])
            # The default protocol: gRPC TraceService/Export calls, on one kept connection.
            self.assertTrue(all(p == otlp_receiver.TRACE_PATH for p in receiver.paths))
            self.assertEqual(len(set(receiver.peers)), 1)
            # The completion log names the caller's trace (OPS-018).
            logs = [r for r in server.log_records() if r.get("msg") == "request completed"]
            self.assertTrue([r for r in logs if r.get("trace_id") == CALLER_TRACE])

    # verifies: OPS-012 — an unsampled caller's decision is kept; ratio 0 samples no root trace.
    def test_sampling_follows_the_parent_then_the_ratio(self):
        with otlp_receiver.Receiver() as receiver, \
                harness.Server(config=traced_config(receiver.endpoint, ratio="0.0")) as server:
            sampled = uuid.uuid4().hex
            unsampled = uuid.uuid4().hex
            with server.channel() as ch:
                for trace, flags in ((unsampled, "00"), (None, None), (sampled, "01")):
                    md = [] if trace is None else [
                        ("traceparent", "00-%s-%s-%s" % (trace, CALLER_SPAN, flags))]
                    call(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                         backend_pb2.GetConfigurationResponse, md)
            spans = receiver.wait_spans(
                lambda s: [x for x in s if x.trace_id.hex() == sampled and
                           x.name == "rpc.get_configuration"], 20, "the sampled trace")
            self.assertTrue(spans)
            server.terminate()  # the shutdown flush exports whatever is still queued
            self.assertEqual(server.wait(15), 0)
            traces = {s.trace_id.hex() for _, s in receiver.spans()}
            self.assertEqual(traces, {sampled})  # no unsampled trace, no root trace (ratio 0)


class ExportConnectionTest(unittest.TestCase):
    # verifies: OPS-015 — with otlp_protocol = "http/protobuf" the exporter keeps its HTTP/1.1
    # connection from batch to batch, and a kept connection the collector has closed costs no
    # batch and counts no failure.
    def test_the_connection_is_kept_and_a_closed_one_is_replaced(self):
        with otlp_receiver.Receiver("http/protobuf", keep_alive=True) as receiver, \
                harness.Server(config=traced_config(receiver.endpoint,
                                                    protocol="http/protobuf")) as server:
            def get_configuration(trace):
                md = [("traceparent", "00-%s-%s-01" % (trace, CALLER_SPAN))]
                with server.channel() as ch:
                    call(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                         backend_pb2.GetConfigurationResponse, md)
                receiver.wait_spans(lambda spans: [s for s in spans if s.trace_id.hex() == trace],
                                    20, "the spans of trace " + trace)

            for _ in range(3):  # three batches: the exporter sends at most one per interval
                get_configuration(uuid.uuid4().hex)
            self.assertGreaterEqual(len(receiver.requests), 3)
            self.assertEqual(receiver.connections, 1)

            receiver.drop_connections()
            get_configuration(uuid.uuid4().hex)
            get_configuration(uuid.uuid4().hex)
            self.assertEqual(receiver.connections, 2)
            families = parse_exposition(harness.scrape(server))
            failures = families.get("xmtp_telemetry_export_failures_total")
            self.assertEqual(failures["samples"][0][2] if failures else 0, 0)
            # telemetry.otlp_logs defaults to false: no log record was exported.
            self.assertEqual(receiver.log_requests, [])
            self.assertTrue(all(p[0] == "/v1/traces" for p in receiver.paths))


class LogExportTest(unittest.TestCase):
    # CONF telemetry.otlp_logs: with an endpoint and otlp_logs = true, every written log line is
    # also exported (LogsService/Export over gRPC, /v1/logs over OTLP/HTTP), with the span
    # resource (OPS-013) and the line's own fields, beside the spans on the same connection.
    def test_log_lines_are_exported_as_otlp_log_records(self):
        for protocol in ("grpc", "http/protobuf"):
            with self.subTest(protocol=protocol):
                self.check_log_export(protocol)

    def check_log_export(self, protocol):
        with otlp_receiver.Receiver(protocol, **({} if protocol == "grpc" else
                                                 {"keep_alive": True})) as receiver, \
                harness.Server(config=traced_config(receiver.endpoint, logs=True,
                                                    protocol=protocol)) as server:
            trace = uuid.uuid4().hex
            with server.channel() as ch:
                call(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                     backend_pb2.GetConfigurationResponse,
                     [("traceparent", "00-%s-%s-01" % (trace, CALLER_SPAN))])

            def completion(records):
                return [r for r in records if r.body.string_value == "request completed" and
                        r.trace_id.hex() == trace]

            record = receiver.wait_logs(completion, 20, "the completion record")[0]
            self.assertEqual(record.severity_text, "INFO")
            self.assertEqual(record.severity_number, 9)
            self.assertGreater(record.time_unix_nano, 0)
            attrs = {kv.key: kv.value for kv in record.attributes}
            self.assertEqual(attrs["method"].string_value,
                             "/xmtp.backend.v1.ConfigurationService/GetConfiguration")
            self.assertEqual(attrs["grpc_code"].string_value, "OK")
            self.assertEqual(attrs["identifier"].string_value, "test.local.xmtp")
            self.assertEqual(attrs["trace_id"].string_value, trace)
            self.assertTrue(harness.UUID_RE.match(attrs["request_id"].string_value))
            self.assertGreaterEqual(attrs["duration_ms"].double_value, 0)
            # The stdout line of the same request carries the same request id.
            lines = [r for r in server.log_records() if r.get("trace_id") == trace]
            self.assertEqual([r["request_id"] for r in lines], [attrs["request_id"].string_value])
            resources = [a for a, _ in receiver.log_records()]
            self.assertTrue(resources)
            self.assertTrue(all(a["xmtp.backend.identifier"] == "test.local.xmtp" and
                                a["service.name"] == "xb-under-test" for a in resources))
            receiver.wait_spans(lambda spans: [s for s in spans if s.trace_id.hex() == trace], 20,
                                "the request's spans")
            if protocol == "grpc":
                self.assertIn(otlp_receiver.LOGS_PATH, receiver.paths)
                self.assertIn(otlp_receiver.TRACE_PATH, receiver.paths)
                # spans and records share the connection
                self.assertEqual(len(set(receiver.peers)), 1)
            else:
                self.assertIn(("/v1/logs", "application/x-protobuf"), receiver.paths)
                self.assertIn(("/v1/traces", "application/x-protobuf"), receiver.paths)
                self.assertEqual(receiver.connections, 1)


class ExportFailureTest(unittest.TestCase):
    # verifies: OPS-015 — with the (gRPC, the default) collector down, serving continues, metrics
    # keep recording, and every failed batch counts in xmtp_telemetry_export_failures_total.
    def test_ops015_export_failures_are_counted_and_serving_continues(self):
        dead = free_port()  # nothing listens here
        with harness.Server(config=traced_config("http://127.0.0.1:%d" % dead)) as server:
            def failures():
                families = parse_exposition(harness.scrape(server))
                fam = families.get("xmtp_telemetry_export_failures_total")
                return fam["samples"][0][2] if fam else 0

            with server.channel() as ch:
                call(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                     backend_pb2.GetConfigurationResponse)
            first = harness.wait_for(failures, 20, "a counted export failure")
            self.assertGreaterEqual(first, 1)
            with server.channel() as ch:
                for _ in range(20):
                    call(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                         backend_pb2.GetConfigurationResponse)
            harness.wait_for(lambda: failures() > first, 20, "the count to rise")
            text = harness.scrape(server)
            self.assertRegex(text, r'grpc_server_handled_total\{grpc_service="xmtp.backend.v1.'
                                   r'ConfigurationService",grpc_method="GetConfiguration",'
                                   r'grpc_type="unary",grpc_code="OK"\} 21')
            started = time.monotonic()
            server.terminate()
            self.assertEqual(server.wait(15), 0)
            self.assertLess(time.monotonic() - started, 10)  # drain + bounded flush


class GrpcErrorStatusTest(unittest.TestCase):
    # verifies: OPS-015 — a gRPC collector that answers every call with a non-zero grpc-status
    # (UNAVAILABLE) counts each batch failed; serving is not affected.
    def test_error_status_counts_export_failures(self):
        with otlp_receiver.Receiver(status=grpc.StatusCode.UNAVAILABLE) as receiver, \
                harness.Server(config=traced_config(receiver.endpoint)) as server:
            def failures():
                fam = parse_exposition(harness.scrape(server)).get("xmtp_telemetry_export_failures_total")
                return fam["samples"][0][2] if fam else 0

            with server.channel() as ch:
                call(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                     backend_pb2.GetConfigurationResponse)
            # Batches go every interval (the tailer's spans too); each is refused and counted.
            self.assertGreaterEqual(harness.wait_for(lambda: failures() >= 2 and failures(), 20,
                                                     "two counted failures"), 2)
            with server.channel() as ch:  # serving goes on
                call(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                     backend_pb2.GetConfigurationResponse)
            self.assertTrue(receiver.spans())  # the calls arrived whole and were refused


# ---- Nothing private (OPS-014) ----------------------------------------------------------------------

def forms(value):
    """A value and the encodings a leak could take: raw, hex, base64 (standard, URL-safe,
    unpadded)."""
    raw = value if isinstance(value, bytes) else value.encode()
    out = {raw, raw.hex().encode(), raw.hex().upper().encode()}
    for enc in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        out.add(enc)
        out.add(enc.rstrip(b"="))
    return out


class RedactionTest(unittest.TestCase):
    # verifies: OPS-014
    def test_no_request_data_in_metrics_spans_or_logs(self):
        group = b"GROUP-ID-SECRET!"  # 16 bytes
        inbox_nonce = 0xd1571c71ec0ffee5
        inbox_hex, _ = U.registration(inbox_nonce)
        installation_key = b"INSTALLATION-KEY-SECRET-32-BYTES"
        payload = b"PAYLOAD-BYTES-NOBODY-MAY-SEE-123"
        cursor = 987654321987
        token = "Bearer AUTHZ-TOKEN-SECRET-VALUE-XYZ"
        caller_request_id = "CALLER-REQUEST-ID-SECRET-4242"
        secrets = [group, inbox_hex, bytes.fromhex(inbox_hex), installation_key, payload,
                   str(cursor), token, token.split(" ")[1], caller_request_id,
                   E.group_topic(group)]
        with otlp_receiver.Receiver() as receiver, \
                harness.Server(config=traced_config(receiver.endpoint, logs=True)) as server:
            metadata = [("authorization", token), ("x-request-id", caller_request_id),
                        ("traceparent", "00-%s-%s-01" % (CALLER_TRACE, CALLER_SPAN))]
            drive_traffic(server, metadata=metadata, group=group, inbox_nonce=inbox_nonce,
                          installation_key=installation_key, payload=payload, cursor=cursor)
            receiver.wait_spans(
                lambda s: [x for x in s if x.name == "stream.update"], 20, "the stream spans")
            metrics = harness.scrape(server).encode()
            server.terminate()
            self.assertEqual(server.wait(15), 0)
            logs = "".join(server.lines).encode() + server.stderr_text.encode()
            bodies = b"".join(receiver.bodies)  # exported spans and log records
            self.assertTrue(bodies and logs and metrics and receiver.log_requests)
            for secret in secrets:
                for form in forms(secret):
                    for where, text in (("metrics", metrics), ("spans and records", bodies),
                                        ("logs", logs)):
                        self.assertNotIn(form, text, "%r (as %r) in the %s" % (secret, form, where))
            # The caller's x-request-id is ignored: every response got a generated UUID.
            ids = [r["request_id"] for r in server.log_records() if "request_id" in r]
            self.assertTrue(ids)
            self.assertTrue(all(harness.UUID_RE.match(i) for i in ids))


if __name__ == "__main__":
    unittest.main()
