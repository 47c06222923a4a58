"""Startup refusals through the real binary: one line naming the key, never the value, non-zero
exit, no listener bound (CONF section 1.4, OPS-021, OPS-022, CONF-009). Every check is covered
key by key in src/config's unit tests; these prove the wiring end to end."""
import os
import socket
import tempfile
import unittest

import harness

SECRET = "SECRETVALUE123"


class StartupTest(unittest.TestCase):
    def refuse(self, config, key, env=None):
        result = harness.run_binary(["--config", config], env=env)
        self.assertNotEqual(result.returncode, 0, result.stdout + result.stderr)
        lines = [l for l in result.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn(key, lines[0])
        self.assertNotIn(SECRET, result.stderr + result.stdout)
        return lines[0]

    def base(self, extra=""):
        return harness.minimal_config(extra).replace("{data}", "/tmp/xb-startup-test")

    def test_unknown_key_is_named(self):
        self.refuse(self.base('[limits]\nbogus_key = "%s"\n' % SECRET), "limits.bogus_key")

    # verifies: OPS-021
    def test_envelope_size_must_fit_delivery(self):
        self.refuse(self.base("[limits]\nmax_envelope_bytes = 2097000\n"),
                    "limits.max_envelope_bytes")

    # verifies: OPS-022 — a bad OTLP endpoint names the key or the variable, not the value.
    def test_bad_otlp_endpoint_names_key_or_variable(self):
        self.refuse(self.base().replace(
            "[telemetry]\n", '[telemetry]\notlp_endpoint = "ftp://%s"\n' % SECRET, 1),
            "telemetry.otlp_endpoint")
        env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT="not a url " + SECRET)
        self.refuse(self.base(), "OTEL_EXPORTER_OTLP_ENDPOINT", env=env)

    # verifies: OPS-022 — a metrics address that cannot be bound refuses start naming it.
    def test_unbindable_metrics_listen_names_the_address(self):
        blocker = socket.socket()
        blocker.bind(("127.0.0.1", 0))
        blocker.listen(1)
        port = blocker.getsockname()[1]
        try:
            config = self.base().replace('metrics_listen = "127.0.0.1:0"',
                                         'metrics_listen = "127.0.0.1:%d"' % port)
            line = self.refuse(config, "127.0.0.1:%d" % port)
            self.assertIn("metrics_listen", line)
        finally:
            blocker.close()

    # verifies: PUSH-226 (PUSH.md 12) — store clock now + push.recipient_ttl_seconds must fit
    # int64 ns: the configuration check lets 9223372036 through (its own bound), the store clock
    # refuses it at start-up, naming the key.
    def test_push_ttl_must_fit_the_store_clock(self):
        with tempfile.TemporaryDirectory(prefix="xb-startup-") as data:
            config = harness.minimal_config(
                "[push]\nrecipient_ttl_seconds = 9223372036\n").replace("{data}", data)
            check = harness.run_binary(["--config", config, "--check-config"])
            self.assertEqual(check.returncode, 0, check.stderr)
            self.refuse(config, "push.recipient_ttl_seconds")

    def test_env_indirection_missing_variable_names_it(self):
        env = {k: v for k, v in os.environ.items() if k != "XB_TEST_MISSING"}
        self.refuse(self.base().replace('identifier = "test.local.xmtp"',
                                        'identifier = "env:XB_TEST_MISSING"'),
                    "XB_TEST_MISSING", env=env)

    def test_env_indirection_resolves_and_check_config_passes(self):
        env = dict(os.environ, XB_TEST_IDENTIFIER="org.example.xmtp")
        config = self.base().replace('identifier = "test.local.xmtp"',
                                     'identifier = "env:XB_TEST_IDENTIFIER"')
        result = harness.run_binary(["--check-config", "--config", config], env=env)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_no_source_and_two_sources_are_refused(self):
        env = {k: v for k, v in os.environ.items() if k != "XMTP_CONFIG"}
        self.assertNotEqual(harness.run_binary([], env=env).returncode, 0)
        result = harness.run_binary(["--config", self.base(), "--config-file", "/nonexistent"],
                                    env=env)
        self.assertNotEqual(result.returncode, 0)

    def test_config_file_and_example_documentation_load(self):
        here = os.path.dirname(os.path.abspath(__file__))
        root = os.path.dirname(os.path.dirname(here))
        for name in ["dev.toml"]:
            result = harness.run_binary(
                ["--check-config", "--config-file", os.path.join(root, "docs", name)])
            self.assertEqual(result.returncode, 0, name + ": " + result.stderr)

    # verifies: OPS-005 — a refused start never binds the gRPC port.
    def test_refused_start_binds_nothing(self):
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        config = self.base("[limits]\nmax_query_limit = 5\ndefault_query_limit = 10\n").replace(
            'listen = "127.0.0.1:0"', 'listen = "127.0.0.1:%d"' % port)
        self.refuse(config, "limits.max_query_limit")
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1)


if __name__ == "__main__":
    unittest.main()
