"""Webhook destination safety (PUSH.md section 10, PUSH-256): every blocked address class and
boundary at Register, the URL rules, allowed_domains matching, a redirect not followed, and a
name that re-resolves to loopback between Register and send refused at send time (no connection
reaches the receiver). Names are added to /etc/hosts (CI runs as root; unique names, the file is
restored afterwards). The webhook channel needs no test hook: the shipped binary runs here, except
where a delivery is checked (the same code path, test build for parity with the other suites)."""
import contextlib
import os
import time
import unittest

import grpc

import harness
import push_client as P
import push_fakes as F
import stream_client as S

BAD_URL = (grpc.StatusCode.INVALID_ARGUMENT, "webhook url is not allowed")
OK = (grpc.StatusCode.OK, None)
FF = "ffff:ffff:ffff:ffff:ffff:ffff:ffff"

BLOCKED_ADDRESSES = [
    # private
    "10.0.0.0", "10.0.0.1", "10.255.255.255", "172.16.0.0", "172.31.255.255", "192.168.0.1",
    "192.168.255.255", "[fc00::]", "[fc00::1]", "[fdff:%s]" % FF,
    # shared / site-local
    "100.64.0.0", "100.100.100.100", "100.127.255.255", "[fec0::]", "[feff:%s]" % FF,
    # loopback
    "127.0.0.1", "127.0.0.0", "127.255.255.255", "[::1]",
    # link-local
    "169.254.0.0", "169.254.169.254", "169.254.255.255", "[fe80::]", "[fe80::1]",
    "[febf:%s]" % FF,
    # unspecified, broadcast, multicast
    "0.0.0.0", "[::]", "255.255.255.255", "224.0.0.0", "224.0.0.1", "239.255.255.255",
    "[ff00::]", "[ff02::1]", "[ffff:%s]" % FF,
    # IPv4-mapped forms of every IPv4 row
    "[::ffff:10.0.0.1]", "[::ffff:172.16.0.1]", "[::ffff:192.168.1.1]", "[::ffff:100.64.0.0]",
    "[::ffff:100.127.255.255]", "[::ffff:127.0.0.1]", "[::ffff:169.254.169.254]",
    "[::ffff:0.0.0.0]", "[::ffff:255.255.255.255]", "[::ffff:224.0.0.1]", "[::ffff:7f00:1]",
]
ALLOWED_ADDRESSES = [
    "8.8.8.8", "100.63.255.255", "100.128.0.0", "[::ffff:100.63.255.255]",
    "[::ffff:100.128.0.0]", "[fe7f:%s]" % FF, "9.255.255.255", "11.0.0.0", "172.15.255.255",
    "172.32.0.0", "192.167.255.255", "192.169.0.0", "169.253.255.255", "169.255.0.0",
    "126.255.255.255", "128.0.0.0", "223.255.255.255", "[2001:4860:4860::8888]", "[fbff::1]",
    "[fe00::1]", "[2606:4700::1111]", "203.0.113.7",
]
BAD_URLS = [
    "invalid", "", "http://127.0.0.1", "http://8.8.8.8/hook", "https:///", "https://",
    "ftp://8.8.8.8/", "https://user:secret@127.0.0.1", "https://user:secret@8.8.8.8/hook",
    "https://user@8.8.8.8/hook", "https://:pw@8.8.8.8/hook", "https://localhost/hook",
    "https://LOCALHOST:8443/hook", "https://no-such-host.invalid/hook",
]


@contextlib.contextmanager
def hosts_entries(lines):
    """Appends `lines` ("address name") to /etc/hosts; restores the original on exit. Returns a
    function that replaces the added lines."""
    with open("/etc/hosts") as f:
        original = f.read()

    def write(entries):
        with open("/etc/hosts", "w") as f:
            f.write(original.rstrip("\n") + "\n" + "".join(e + "\n" for e in entries))
    try:
        write(lines)
        yield write
    finally:
        with open("/etc/hosts", "w") as f:
            f.write(original)


def unique_name(label="hook"):
    return "%s-%s.xb-ssrf.test" % (label, os.urandom(5).hex())


class RegisterTest(unittest.TestCase):
    """allow_private_addresses = false (the default), no allowed_domains."""

    @classmethod
    def setUpClass(cls):
        cls.server = harness.Server(config=P.server_config("[push]\n[push.http]\n"))
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.tmp.cleanup()
        cls.server.check_sanitizers()

    def register(self, url):
        return P.status_of(self.server, P.REGISTER,
                           P.register_request(P.Recipient(), url=url, signing_key=b"s" * 16))

    # verifies: PUSH-256 — every blocked class and its boundaries, IPv4-mapped forms included.
    def test_blocked_address_classes(self):
        for address in BLOCKED_ADDRESSES:
            self.assertEqual(self.register("https://%s/hook" % address), BAD_URL, address)
            self.assertEqual(self.register("https://%s:8443/x?q=1" % address), BAD_URL, address)

    # verifies: PUSH-256 — the boundaries just outside each class are allowed.
    def test_allowed_addresses(self):
        for address in ALLOWED_ADDRESSES:
            self.assertEqual(self.register("https://%s/hook" % address), OK, address)

    # verifies: PUSH-256 — scheme, userinfo, host, resolution (10's registration examples).
    def test_url_rules(self):
        for url in BAD_URLS:
            self.assertEqual(self.register(url), BAD_URL, url)
        self.assertEqual(self.register("https://8.8.8.8/hook"), OK)

    # verifies: PUSH-256 — a name is checked by what it resolves to: any blocked address fails.
    def test_names_are_checked_by_their_addresses(self):
        public, private, mixed = unique_name(), unique_name(), unique_name()
        with hosts_entries(["203.0.113.7 " + public, "10.1.2.3 " + private,
                            "203.0.113.8 " + mixed, "192.168.7.7 " + mixed,
                            "::1 " + private]):
            self.assertEqual(self.register("https://%s/hook" % public), OK)
            self.assertEqual(self.register("https://%s/hook" % private), BAD_URL)
            self.assertEqual(self.register("https://%s/hook" % mixed), BAD_URL)


class AllowedDomainsTest(unittest.TestCase):
    # verifies: PUSH-256 — allowed_domains: exact and "*." entries, case-insensitive, the host
    # alone; then the address check still applies.
    def test_allowed_domains(self):
        tag = os.urandom(4).hex()
        suffix, exact = "s%s.xb-ssrf.test" % tag, "exact-%s.xb-ssrf.test" % tag
        names = {"a." + suffix: "203.0.113.7", "a.b." + suffix: "203.0.113.7",
                 suffix: "203.0.113.7", "evil" + suffix: "203.0.113.7",
                 "a.%s.evil" % suffix: "203.0.113.7", exact: "203.0.113.7",
                 "sub." + exact: "203.0.113.7", "lo." + suffix: "127.0.0.1"}
        config = P.server_config('[push]\n[push.http]\nallowed_domains = ["*.%s", "%s"]\n'
                                 % (suffix, exact))
        with hosts_entries(["%s %s" % (a, n) for n, a in names.items()]), \
                harness.Server(config=config) as server:
            def register(host):
                return P.status_of(server, P.REGISTER, P.register_request(
                    P.Recipient(), url="https://%s/hook" % host, signing_key=b"s" * 16))
            for host in ("a." + suffix, "a.b." + suffix, ("A." + suffix).upper(), exact,
                         exact.upper(), exact + ":8443"):
                self.assertEqual(register(host), OK, host)
            for host in (suffix, "evil" + suffix, "a.%s.evil" % suffix, "sub." + exact,
                         "8.8.8.8", "lo." + suffix):
                self.assertEqual(register(host), BAD_URL, host)


class SendTimeTest(unittest.TestCase):
    """Deliveries through the webhook receiver."""

    def setUp(self):
        self.ca = F.TestCa()
        self.addCleanup(self.ca.cleanup)

    def server(self, http_extra):
        return P.new_server(S.Engine(), "[push]\nmax_attempts = 2\n[push.http]\n" + http_extra,
                            env=self.ca.env())

    # verifies: PUSH-256 — a redirect answer is never followed (3xx = rejected, one attempt).
    def test_redirect_is_not_followed(self):
        receiver = F.WebhookReceiver(self.ca)
        self.addCleanup(receiver.close)
        with self.server("allow_private_addresses = true\n") as server:
            gid = P.group_id()
            r = P.Recipient()
            key = os.urandom(32)
            P.register(server, r, url=receiver.url("/hook", key), signing_key=key)
            P.update(server, r, adds=[P.subscription(P.group_topic(gid))])
            receiver.url("/redirected/hook", key)  # a followed redirect would verify here
            receiver.script("/hook", receiver.redirect("/hook", 307))
            P.publish(server, P.app_message(gid))
            P.wait_metric(server, "xmtp_push_deliveries_total", 1, 20, channel="http",
                          outcome="rejected")
            time.sleep(0.5)  # a followed redirect would come right after the answer
            self.assertEqual([q.path for q in receiver.snapshot()], ["/hook"])
            self.assertEqual(receiver.problems(), [])

    # verifies: PUSH-256 — the name is resolved and checked again before the attempt: public at
    # Register, loopback at send time -> rejected, and nothing connects to the receiver.
    def test_name_re_resolved_to_loopback_is_refused_at_send_time(self):
        name = unique_name("rebind")
        receiver = F.WebhookReceiver(self.ca, dns_names=(name,))
        self.addCleanup(receiver.close)
        with hosts_entries(["203.0.113.7 " + name]) as set_hosts, \
                self.server("") as server:
            gid = P.group_id()
            r = P.Recipient()
            key = os.urandom(32)
            P.register(server, r, url=receiver.url("/hook", key, host=name), signing_key=key)
            P.update(server, r, adds=[P.subscription(P.group_topic(gid))])
            set_hosts(["127.0.0.1 " + name])
            P.publish(server, P.app_message(gid))
            P.wait_metric(server, "xmtp_push_deliveries_total", 1, 20, channel="http",
                          outcome="rejected")
            self.assertEqual(P.metric(server, "xmtp_push_deliveries_total", channel="http",
                                      outcome="delivered"), 0)
            self.assertEqual(receiver.snapshot(), [])
            self.assertEqual(receiver.connections(), 0)


if __name__ == "__main__":
    unittest.main()
