"""Every metric family, label name and label value that the alert rules
(deploy/prometheus/alerts.yml) and the Grafana dashboard (deploy/grafana/xmtp-backend.json) name
is one the running server exposes (issue 34).

Matched against the LIVE /metrics exposition of the real binary, not against a list kept here:
a family renamed or a label dropped in src/telemetry fails this test. Families that count only
failures are absent until their first event, so the test makes each happen first: an
unauthenticated publish (auth rejection), a malformed one (publish rejection), an unreachable
OTLP collector (export failure), a file-size limit set on the server process (store failures,
and a store failure line past its budget: log lines suppressed), and an open-file limit
(accept failure). Only the families of EXTERNAL (deploy_files.py: `up` and the standard
exporters, named where they come from) may be named besides, and in the alert rules only in the
infrastructure group. Label values are matched too where the exposition shows every value of
the label (the enum labels); the route, code and operation labels show a value only once it has
been recorded, so their values are not matched."""
import resource
import signal
import socket
import subprocess
import threading
import unittest
import urllib.request

import grpc

import deploy_files as D
import envelopes as E
import harness
import promql
from xmtp.backend.v1 import backend_pb2

PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
API_KEY = "deploy-check-" + "k" * 40
RECORDED_ONLY = {"grpc_service", "grpc_method", "grpc_type", "grpc_code", "operation"}
FAILURE_ONLY = ("xmtp_telemetry_export_failures_total", "xmtp_auth_rejections_total",
                "xmtp_publish_rejections_total", "xmtp_db_errors_total", "xmtp_db_failures_total",
                "xmtp_log_lines_suppressed_total", "xmtp_net_accept_failures_total")


def parse_exposition(text):
    """{sample name: {label: {values}}} of every sample line, and the set of # TYPE names."""
    samples, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.partition("{")
        labels = samples.setdefault(name.split(" ")[0], {})
        if rest:
            for label, _, value in promql.label_block("{" + rest.rsplit("}", 1)[0] + "}"):
                labels.setdefault(label, set()).add(value)
    return samples, typed


class Server(harness.Server):
    """harness.Server whose process keeps the test's ignored SIGXFSZ (Popen resets it by
    default), so that a file-size limit fails the server's writes instead of killing it."""

    def spawn(self):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=self.env, text=True, restore_signals=False)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()


class LiveNamesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The OTLP collector: a port bound but not listening, so every export is refused.
        cls.collector = socket.socket()
        cls.collector.bind(("127.0.0.1", 0))
        config = harness.minimal_config(
            '[auth]\nenabled = true\n[auth.api_keys]\n"deploy-check" = "%s"\n' % API_KEY
        ).replace('metrics_listen = "127.0.0.1:0"\n',
                  'metrics_listen = "127.0.0.1:0"\notlp_endpoint = "http://127.0.0.1:%d"\n'
                  'sample_ratio = 1.0\n' % cls.collector.getsockname()[1])
        # The file-size limit below must fail the server's writes, not kill it: an ignored
        # SIGXFSZ stays ignored across exec.
        cls.old_xfsz = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        cls.server = Server(config=config)
        try:
            cls.server.start()
            cls.exercise()
            cls.samples, cls.typed = parse_exposition(cls.scrape())
        except BaseException:
            cls.server.kill()
            cls.collector.close()
            raise
        finally:
            signal.signal(signal.SIGXFSZ, cls.old_xfsz)

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.collector.close()
        cls.server.tmp.cleanup()
        cls.server.check_sanitizers()

    @classmethod
    def scrape(cls):
        return urllib.request.urlopen("http://127.0.0.1:%d/metrics" % cls.server.metrics_port,
                                      timeout=5).read().decode()

    @classmethod
    def publish(cls, envelope, key=API_KEY):
        metadata = (("authorization", "Bearer " + key),) if key else None
        with cls.server.channel() as ch:
            try:
                harness.unary(ch, PUBLISH, backend_pb2.PublishRequest(envelopes=[envelope]),
                              backend_pb2.PublishResponse, timeout=10, metadata=metadata)
            except grpc.RpcError as e:
                return e.code()
        return grpc.StatusCode.OK

    @classmethod
    def messages(cls, prefix):
        return [r for r in cls.server.log_records() if r.get("msg", "").startswith(prefix)]

    @classmethod
    def exercise(cls):
        """Makes every failure-only family appear (see the module's comment)."""
        group = b"deploy-check-grp"
        assert cls.publish(E.group_message(group, 1, b"ok")) == grpc.StatusCode.OK
        assert cls.publish(E.group_message(group), key=None) == grpc.StatusCode.UNAUTHENTICATED
        bad = backend_pb2.ClientEnvelope(group_message=backend_pb2.GroupMessage(data=b"\x00"))
        assert cls.publish(bad) == grpc.StatusCode.INVALID_ARGUMENT
        pid = cls.server.proc.pid
        # Store failures: every write at an offset past 1 byte fails (EFBIG). Two of one cause
        # within the log interval: the second line is suppressed.
        fsize = resource.prlimit(pid, resource.RLIMIT_FSIZE)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (1, fsize[1]))
        try:
            codes = [cls.publish(E.group_message(group, 1, b"full %d" % i)) for i in range(3)]
        finally:
            resource.prlimit(pid, resource.RLIMIT_FSIZE, fsize)
        assert grpc.StatusCode.OK not in codes, codes
        harness.wait_for(lambda: cls.messages("store failed"), 10, "a store failure line")
        # An accept failure: no descriptor left for the accepted connection. The server logs
        # the first one on stdout, which needs no new descriptor.
        nofile = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (3, nofile[1]))
        try:
            client = socket.create_connection(("127.0.0.1", cls.server.port), timeout=5)
            harness.wait_for(lambda: cls.messages("accept failing"), 10, "an accept failure")
        finally:
            resource.prlimit(pid, resource.RLIMIT_NOFILE, nofile)
        client.close()
        harness.wait_for(lambda: "xmtp_telemetry_export_failures_total" in cls.scrape(), 15,
                         "a failed OTLP export")

    def family_labels(self, family):
        """The labels the live exposition shows on `family`, or None when it is not there."""
        if family in self.samples:
            return self.samples[family]
        return None

    def test_failure_only_families_were_made_to_appear(self):
        for family in FAILURE_ONLY:
            self.assertIn(family, self.typed, family)

    def check_expression(self, where, expr, external_allowed):
        selectors, grouping = promql.read(D.substitute(expr))
        names = set(D.TARGET_LABELS)
        for selector in selectors:
            self.assertIsNotNone(selector.family, where)
            live = self.family_labels(selector.family)
            if live is None:
                self.assertIn(selector.family, D.EXTERNAL,
                              "%s: %s is neither in the live exposition nor an allowed external "
                              "family" % (where, selector.family))
                self.assertTrue(external_allowed or selector.family == "up",
                                "%s: external family %s outside the infrastructure group"
                                % (where, selector.family))
                labels = D.EXTERNAL[selector.family]["labels"]
            else:
                labels = set(live)
            names |= labels
            for label, op, value in selector.matchers:
                self.assertIn(label, labels | D.TARGET_LABELS,
                              "%s: %s has no label %s" % (where, selector.family, label))
                values = promql.literal_values(op, value)
                if live is None or label in D.TARGET_LABELS | RECORDED_ONLY or values is None:
                    continue
                for v in values:
                    self.assertIn(v, live[label], "%s: %s{%s} never takes the value %r"
                                  % (where, selector.family, label, v))
        for label in grouping:
            self.assertIn(label, names, "%s: groups by %s, a label of none of its families"
                          % (where, label))

    def test_dashboard_names_only_live_families_and_labels(self):
        expressions = D.dashboard_expressions(D.load_dashboard())
        self.assertGreater(len(expressions), 40)
        for where, expr in expressions:
            self.check_expression(where, expr, external_allowed=True)

    def test_alert_rules_name_only_live_families_and_labels(self):
        rules = D.alert_rules()
        self.assertGreater(len(rules), 20)
        for group, rule in rules:
            self.check_expression("alert " + rule["alert"], rule["expr"],
                                  external_allowed=group == D.INFRASTRUCTURE_GROUP)

    def test_the_check_catches_a_wrong_name(self):
        # The check itself: a misspelt family, label or value is refused.
        for expr in ('rate(xmtp_stream_ended_totals[5m])',
                     'xmtp_stream_ended_total{reasons="client"}',
                     'xmtp_stream_ended_total{reason="clients"}',
                     'sum by (cause) (xmtp_stream_ended_total)',
                     'node_filesystem_avail_bytes'):
            with self.assertRaises(AssertionError, msg=expr):
                self.check_expression("self-test", expr, external_allowed=False)


if __name__ == "__main__":
    unittest.main()
