"""The Debian package (issue 34): scripts/package builds it, and this suite checks what it holds
without installing it on this machine: `dpkg-deb -I/-c`, then `dpkg -x` into a throwaway root.
The packaged binary, run from there, accepts the shipped /etc configuration with its env:
variables set to the test PostgreSQL cluster and serves a grpc.health.v1 Check; the control file
depends on the package of every shared library the binary links; the stripped binary's build id
names its debug file in the -dbgsym package."""
import glob
import os
import re
import subprocess
import tempfile
import unittest

import grpc

import harness
import health_pb2

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(os.environ.get("XB_BUILD_DIR", os.path.join(ROOT, "build")))
CHECK = "/grpc.health.v1.Health/Check"


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, check=True, timeout=120,
                          **kwargs).stdout


def build_id(path):
    match = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", path]))
    if not match:
        raise AssertionError("no build id in " + path)
    return match.group(1)


def owning_package(library_path):
    """The Debian package that ships `library_path` (either side of the /usr merge)."""
    candidates = {library_path, os.path.realpath(library_path)}
    for path in list(candidates):
        if path.startswith("/usr/"):
            candidates.add(path[len("/usr"):])
        else:
            candidates.add("/usr" + path)
    for path in candidates:
        found = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True)
        if found.returncode == 0:
            return found.stdout.split(":", 1)[0]
    raise AssertionError("no package ships " + library_path)


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.deb = run([os.path.join(ROOT, "scripts", "package"), BUILD],
                      cwd=ROOT).strip().splitlines()[-1]
        if not os.path.isabs(cls.deb):
            cls.deb = os.path.join(ROOT, cls.deb)
        cls.ddebs = glob.glob(os.path.join(os.path.dirname(cls.deb), "xmtp-backend-dbgsym_*.ddeb"))
        cls.tmp = tempfile.TemporaryDirectory(prefix="xb-pkg-")
        cls.root = os.path.join(cls.tmp.name, "root")
        run(["dpkg", "-x", cls.deb, cls.root])
        cls.binary = os.path.join(cls.root, "usr", "bin", "xmtp-backend")
        cls.control = run(["dpkg-deb", "-f", cls.deb])
        cls.contents = run(["dpkg-deb", "-c", cls.deb])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def field(self, name):
        match = re.search(r"^%s: (.*)$" % name, self.control, flags=re.M)
        self.assertIsNotNone(match, self.control)
        return match.group(1)

    def test_file_name_and_version_are_the_project_version(self):
        version = self.field("Version")
        self.assertEqual(os.path.basename(self.deb), "xmtp-backend_%s_amd64.deb" % version)
        self.assertEqual(run([self.binary, "--version"]).strip(), "xmtp-backend " + version)
        self.assertEqual(self.field("Package"), "xmtp-backend")
        self.assertEqual(self.field("Architecture"), "amd64")

    def test_depends_names_the_package_of_every_linked_library(self):
        depends = {d.strip().split(" ")[0] for d in self.field("Depends").split(",")}
        self.assertIn("adduser", depends)  # postinst creates the system user with it
        # The libraries the binary names itself (NEEDED), found where the loader finds them.
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]",
                            run(["readelf", "-d", self.binary]))
        found = dict(re.findall(r"^\s*(\S+) => (/\S+) \(", run(["ldd", self.binary]), flags=re.M))
        self.assertGreater(len(needed), 5, needed)
        for soname in needed:
            self.assertIn(owning_package(found[soname]), depends, soname)

    def test_contents_unit_config_docs_and_deploy_files(self):
        for path in ["./usr/bin/xmtp-backend", "./lib/systemd/system/xmtp-backend.service",
                     "./etc/xmtp-backend/config.toml", "./etc/xmtp-backend/env",
                     "./usr/share/doc/xmtp-backend/copyright",
                     "./usr/share/doc/xmtp-backend/README.md",
                     "./usr/share/doc/xmtp-backend/operations.md",
                     "./usr/share/doc/xmtp-backend/config.example.toml",
                     "./usr/share/xmtp-backend/schema/config.schema.json"]:
            self.assertRegex(self.contents, r"\s%s\n" % re.escape(path))
        # The env file will hold secrets: root only.
        self.assertRegex(self.contents, r"-rw------- root/root .* \./etc/xmtp-backend/env\n")
        with open(os.path.join(ROOT, "deploy", "systemd", "xmtp-backend.service")) as f:
            shipped = f.read()
        with open(os.path.join(self.root, "lib/systemd/system/xmtp-backend.service")) as f:
            self.assertEqual(f.read(), shipped)
        # Whatever deploy/grafana and deploy/prometheus hold is under /usr/share/xmtp-backend.
        for source in glob.glob(os.path.join(ROOT, "deploy", "*", "**"), recursive=True):
            relative = os.path.relpath(source, os.path.join(ROOT, "deploy"))
            if os.path.isfile(source) and relative.split(os.sep)[0] in ("grafana", "prometheus"):
                self.assertIn(" ./usr/share/xmtp-backend/%s\n" % relative, self.contents)

    def test_conffiles_and_maintainer_scripts(self):
        control = os.path.join(self.tmp.name, "control")
        run(["dpkg-deb", "-e", self.deb, control])
        with open(os.path.join(control, "conffiles")) as f:
            self.assertEqual(f.read().split(),
                             ["/etc/xmtp-backend/config.toml", "/etc/xmtp-backend/env"])
        for script in ["postinst", "prerm", "postrm"]:
            path = os.path.join(control, script)
            self.assertTrue(os.access(path, os.X_OK), script)
            run(["sh", "-n", path])
        with open(os.path.join(control, "postinst")) as f:
            self.assertIn("adduser --system --group", f.read())

    def test_binary_is_stripped_and_its_debug_file_matches_by_build_id(self):
        self.assertNotIn(".symtab", run(["readelf", "-S", "-W", self.binary]))
        self.assertEqual(len(self.ddebs), 1, self.ddebs)
        debug_root = os.path.join(self.tmp.name, "dbgsym")
        run(["dpkg", "-x", self.ddebs[0], debug_root])
        bid = build_id(self.binary)
        debug_file = os.path.join(debug_root, "usr/lib/debug/.build-id", bid[:2], bid[2:] + ".debug")
        self.assertTrue(os.path.isfile(debug_file), os.listdir(debug_root))
        self.assertEqual(build_id(debug_file), bid)
        # The symbols themselves: main and a server function resolve by name.
        symbols = run(["nm", "-C", debug_file])
        self.assertRegex(symbols, r" T main\n")
        self.assertIn("xb::server::Server::ReportServing()", symbols)

    def test_help_covers_every_option_and_the_man_page_sections(self):
        text = run([self.binary, "--help"])
        for word in ["--config-file", "--config ", "--log-level", "--check-config", "--version",
                     "--help", "XMTP_CONFIG", "OTEL_EXPORTER_OTLP_ENDPOINT", "NOTIFY_SOCKET",
                     "env:NAME", "SIGTERM", "EXIT STATUS", "FILES", "SEE ALSO",
                     "/etc/xmtp-backend/config.toml"]:
            self.assertIn(word, text)

    def test_shipped_config_needs_its_env_variables(self):
        checked = subprocess.run([self.binary, "--check-config", "--config-file",
                                  self.config_path()], capture_output=True, text=True,
                                 env=self.env_without_database())
        self.assertEqual(checked.returncode, 1)
        self.assertRegex(checked.stderr,
                         r"environment variable XMTP_DATABASE(_REPLICA)?_URL is not available")

    @unittest.skipUnless(os.environ.get("XB_PG_PRIMARY"), "needs XB_PG_PRIMARY")
    def test_shipped_config_checks_and_serves_health_on_postgresql(self):
        database = harness.create_pg_database()
        try:
            env = self.env_without_database()
            env["XMTP_DATABASE_URL"] = database.primary
            env["XMTP_DATABASE_REPLICA_URL"] = database.replica
            checked = subprocess.run([self.binary, "--check-config", "--config-file",
                                      self.config_path()], capture_output=True, text=True, env=env)
            self.assertEqual((checked.returncode, checked.stdout), (0, "configuration is valid\n"),
                             checked.stderr)
            self.serve_health(env)
        finally:
            database.drop()

    def serve_health(self, env):
        # The shipped listeners are 0.0.0.0:5050 and :9464; the test binds loopback ephemeral
        # ports instead, and changes nothing else.
        with open(self.config_path()) as f:
            text = f.read()
        text, n = re.subn(r'^listen = "0\.0\.0\.0:5050"$', 'listen = "127.0.0.1:0"', text,
                          flags=re.M)
        self.assertEqual(n, 1)
        text, n = re.subn(r'^metrics_listen = "0\.0\.0\.0:9464"$',
                          'metrics_listen = "127.0.0.1:0"', text, flags=re.M)
        self.assertEqual(n, 1)
        path = os.path.join(self.tmp.name, "config-loopback.toml")
        with open(path, "w") as f:
            f.write(text)
        server = harness.Server(binary=self.binary, env=env)
        server.args = [self.binary, "--config-file", path]
        with server:
            with grpc.insecure_channel(server.target) as ch:
                resp, _ = harness.unary(ch, CHECK, health_pb2.HealthCheckRequest(),
                                        health_pb2.HealthCheckResponse)
            self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING)
            server.terminate()
            self.assertEqual(server.wait(timeout=20), 0)

    def config_path(self):
        return os.path.join(self.root, "etc", "xmtp-backend", "config.toml")

    @staticmethod
    def env_without_database():
        env = dict(os.environ)
        for name in ["XMTP_DATABASE_URL", "XMTP_DATABASE_REPLICA_URL", "XMTP_CONFIG",
                     "NOTIFY_SOCKET", "OTEL_EXPORTER_OTLP_ENDPOINT"]:
            env.pop(name, None)
        return env


if __name__ == "__main__":
    unittest.main()
