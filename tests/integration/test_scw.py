"""Smart-contract-wallet verification against the real binary and a local JSON-RPC chain stub
(VALIDATION.md 5.9, 7; API-231, API-271; IDENT-060..062): VerifySmartContractWalletSignatures
verdicts and limits, the bounded verdict cache, chain outage / revert / timeout as UNAVAILABLE, and
identity updates signed by a smart-contract wallet (ERC-6492) including block freshness."""
import os
import socket
import time
import unittest
import urllib.request

import grpc

import chain_stub
import harness
import identity_updates as U
from google.rpc import status_pb2
from identity.api.v1 import identity_pb2
from identity.associations import association_pb2 as A
from xmtp.backend.v1 import backend_pb2

PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
VERIFY = "/xmtp.backend.v1.IdentityService/VerifySmartContractWalletSignatures"
V3_VERIFY = "/xmtp.identity.api.v1.IdentityApi/VerifySmartContractWalletSignatures"
GET_INBOX_IDS = "/xmtp.backend.v1.IdentityService/GetInboxIds"
R = backend_pb2.PublishError
VerifyRequest = backend_pb2.VerifySmartContractWalletSignaturesRequest
VerifyResponse = backend_pb2.VerifySmartContractWalletSignaturesResponse


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class ScwTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stub = chain_stub.ChainStub()
        config = harness.minimal_config(
            '[chains]\n"eip155:1" = "%s"\n"eip155:7" = "http://127.0.0.1:%d/rpc"\n'
            '[validation]\nmax_scw_cache_entries = 2\n' % (cls.stub.url, closed_port()))
        cls.server = harness.Server(config=config)
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.tmp.cleanup()
        cls.stub.stop()
        cls.server.check_sanitizers()

    def setUp(self):
        self.stub.mode = "ok"
        self.stub.release.clear()
        self.assertEqual(self.stub.bad_calls, [])

    def verify(self, *entries, timeout=30):
        req = VerifyRequest()
        for account, block, digest, sig in entries:
            e = req.signatures.add(account_id=account, hash=digest, signature=sig)
            if block is not None:
                e.block_number = block
        with self.server.channel() as ch:
            resp, _ = harness.unary(ch, VERIFY, req, VerifyResponse, timeout=timeout)
        return [(r.is_valid, r.block_number) for r in resp.responses]

    def verify_fails(self, *entries, timeout=30):
        with self.assertRaises(grpc.RpcError) as ctx:
            self.verify(*entries, timeout=timeout)
        return ctx.exception.code()

    def wallet(self, valid=True):
        """A fresh wallet address, digest and signature; registered valid at the stub."""
        address, digest, sig = os.urandom(20), os.urandom(32), os.urandom(70)
        if valid:
            self.stub.valid.add((address, digest, sig))
        return address, digest, sig

    def scrape(self, result):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.server.metrics_port,
                                    timeout=10) as r:
            text = r.read().decode()
        for line in text.splitlines():
            if line.startswith('xmtp_scw_verifications_total{result="%s"}' % result):
                return float(line.split()[-1])
        return 0.0

    def scw_spans(self, status):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.server.metrics_port,
                                    timeout=10) as r:
            text = r.read().decode()
        prefix = ('xmtp_operation_duration_seconds_count{operation="scw.verify",status="%s"}'
                  % status)
        for line in text.splitlines():
            if line.startswith(prefix):
                return float(line.split()[-1])
        return 0.0

    # verifies: API-271 — one verdict per entry at the block used; invalid is not a failure.
    # verifies: OPS-019 — one scw.verify operation span per entry.
    def test_verdicts_and_blocks(self):
        a, d, s = self.wallet()
        b, e, t = self.wallet(valid=False)
        spans_before = self.scw_spans("ok")
        account = lambda addr: "eip155:1:0x" + addr.hex().upper()  # either case is accepted
        self.assertEqual(self.verify((account(a), 100, d, s), (account(b), 100, e, t),
                                     (account(a), None, d, s)),
                         [(True, 100), (False, 100), (True, self.stub.head)])
        self.assertEqual(self.stub.bad_calls, [])
        self.assertEqual(self.scw_spans("ok") - spans_before, 3)

    # verifies: VALIDATION.md 5.9.4 — verdicts at a block are cached (LRU, bounded by
    # validation.max_scw_cache_entries = 2); "latest" calls never are; the cache is counted.
    def test_cache_is_bounded_and_latest_is_never_cached(self):
        w = [self.wallet() for _ in range(3)]
        acct = lambda x: "eip155:1:0x" + x[0].hex()
        calls = lambda: self.stub.count("eth_call")
        valid_before = self.scrape("valid")
        start = calls()
        self.verify(*[(acct(x), 200, x[1], x[2]) for x in w])
        self.assertEqual(calls() - start, 3)
        self.verify((acct(w[2]), 200, w[2][1], w[2][2]), (acct(w[1]), 200, w[1][1], w[1][2]))
        self.assertEqual(calls() - start, 3)  # both cached
        self.verify((acct(w[0]), 200, w[0][1], w[0][2]))
        self.assertEqual(calls() - start, 4)  # evicted: the cache holds two entries
        self.verify((acct(w[0]), None, w[0][1], w[0][2]))
        self.verify((acct(w[0]), None, w[0][1], w[0][2]))
        self.assertEqual(calls() - start, 6)  # latest: a call each time
        self.assertEqual(self.scrape("valid") - valid_before, 8)

    # verifies: API-231, IDENT-061 — outage, unrouted chain, revert and timeout are UNAVAILABLE.
    def test_chain_failures_are_unavailable(self):
        a, d, s = self.wallet()
        errors_before = self.scrape("error")
        self.assertEqual(self.verify_fails(("eip155:7:0x" + a.hex(), 5, d, s)),
                         grpc.StatusCode.UNAVAILABLE)  # nothing listens
        self.assertEqual(self.verify_fails(("eip155:5:0x" + a.hex(), 5, d, s)),
                         grpc.StatusCode.UNAVAILABLE)  # no route
        self.stub.mode = "revert"
        self.assertEqual(self.verify_fails(("eip155:1:0x" + a.hex(), 5, d, s)),
                         grpc.StatusCode.UNAVAILABLE)
        self.stub.mode = "hang"
        started = time.monotonic()
        self.assertEqual(self.verify_fails(("eip155:1:0x" + a.hex(), 6, d, s)),
                         grpc.StatusCode.UNAVAILABLE)
        self.assertLess(time.monotonic() - started, 15)  # the per-call deadline, not ours
        self.stub.release.set()
        self.assertEqual(self.scrape("error") - errors_before, 4)
        # Failures were not cached: the chain is asked again once it answers.
        self.stub.mode = "ok"
        self.assertEqual(self.verify(("eip155:1:0x" + a.hex(), 5, d, s)), [(True, 5)])

    # verifies: API-271 bounds, VALIDATION.md 7 (all entries checked before any chain call)
    def test_malformed_requests(self):
        a, d, s = self.wallet()
        ok = ("eip155:1:0x" + a.hex(), 1, d, s)
        before = self.stub.count("eth_call")
        for bad in [("eip/155:1:0x" + a.hex(), 1, d, s), ("eip155:01:0x" + a.hex(), 1, d, s),
                    ("eip155:1:" + a.hex(), 1, d, s), ("eip155:1:0x" + a.hex(), 1, d[:31], s)]:
            self.assertEqual(self.verify_fails(ok, bad), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(self.verify_fails(*[ok] * 101), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(self.stub.count("eth_call"), before)
        self.assertEqual(len(self.verify(*[ok] * 100)), 100)

    # verifies: API-271 over the V3 IdentityApi (issue 33): its own field numbers (signature 3,
    # hash 4), the same verdicts and blocks, the same bounds.
    def test_v3_verdicts_and_bounds(self):
        a, d, s = self.wallet()
        b, e, t = self.wallet(valid=False)
        req = identity_pb2.VerifySmartContractWalletSignaturesRequest()
        for addr, digest, sig, block in ((a, d, s, 100), (b, e, t, 100), (a, d, s, None)):
            entry = req.signatures.add(account_id="eip155:1:0x" + addr.hex(), hash=digest,
                                       signature=sig)
            if block is not None:
                entry.block_number = block
        with self.server.channel() as ch:
            resp, _ = harness.unary(ch, V3_VERIFY, req,
                                    identity_pb2.VerifySmartContractWalletSignaturesResponse)
            self.assertEqual([(r.is_valid, r.block_number) for r in resp.responses],
                             [(True, 100), (False, 100), (True, self.stub.head)])
            bad = identity_pb2.VerifySmartContractWalletSignaturesRequest()
            bad.signatures.add(account_id="eip155:1:0x" + a.hex(), hash=d[:31], signature=s)
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, V3_VERIFY, bad,
                              identity_pb2.VerifySmartContractWalletSignaturesResponse)
            self.assertEqual((ctx.exception.code(), ctx.exception.details()),
                             (grpc.StatusCode.INVALID_ARGUMENT, "hash is not 32 bytes"))
        self.assertEqual(self.stub.bad_calls, [])

    # ---- identity updates signed by a smart-contract wallet (5.5.4, 5.9.2)

    def scw_registration(self, block, valid=True, chain="eip155:1"):
        return U.scw_registration(self.stub, block, valid, chain)

    def publish(self, env):
        with self.server.channel() as ch:
            return harness.unary(ch, PUBLISH, backend_pb2.PublishRequest(envelopes=[env]),
                                 backend_pb2.PublishResponse, timeout=30)[0]

    def publish_fails(self, env):
        with self.assertRaises(grpc.RpcError) as ctx:
            self.publish(env)
        return ctx.exception

    def reason(self, err):
        self.assertEqual(err.code(), grpc.StatusCode.INVALID_ARGUMENT, err.details())
        for key, value in err.trailing_metadata() or ():
            if key == "grpc-status-details-bin":
                return R.FromString(status_pb2.Status.FromString(value).details[0].value).reason
        raise AssertionError("no PublishError")

    # verifies: VALIDATION.md 5.5.4, 5.9.3, 6 (an ERC-6492 signer creates an inbox)
    # verifies: OPS-019 — the publish-time chain verification is a scw.verify span too.
    def test_scw_registration_is_accepted_and_projected(self):
        address, inbox, env = self.scw_registration(self.stub.head - 1)
        spans_before = self.scw_spans("ok")
        self.publish(env)
        self.assertEqual(self.scw_spans("ok") - spans_before, 1)
        req = backend_pb2.GetInboxIdsRequest()
        req.requests.add(identifier=address, identifier_kind=A.IDENTIFIER_KIND_ETHEREUM)
        with self.server.channel() as ch:
            resp, _ = harness.unary(ch, GET_INBOX_IDS, req, backend_pb2.GetInboxIdsResponse)
        self.assertEqual(resp.responses[0].inbox_id, inbox)

    # verifies: IDENT-062 (freshness), 5.9.3 negative verdict, API-231 for identity updates
    def test_scw_registration_failures(self):
        head = self.stub.head
        self.assertEqual(self.reason(self.publish_fails(self.scw_registration(head + 1)[2])),
                         R.REASON_INVALID_SIGNATURE)  # past the head
        self.assertEqual(self.reason(self.publish_fails(self.scw_registration(head - 200)[2])),
                         R.REASON_INVALID_SIGNATURE)  # 2400 s older than the head
        self.assertEqual(self.reason(self.publish_fails(
            self.scw_registration(head - 1, valid=False)[2])), R.REASON_INVALID_SIGNATURE)
        self.assertEqual(self.reason(self.publish_fails(
            self.scw_registration(head - 1, chain="eip155:01")[2])), R.REASON_INVALID_SIGNATURE)
        for chain in ("eip155:7", "eip155:5"):
            err = self.publish_fails(self.scw_registration(5, chain=chain)[2])
            self.assertEqual(err.code(), grpc.StatusCode.UNAVAILABLE, chain)
        self.stub.mode = "revert"
        err = self.publish_fails(self.scw_registration(head - 1)[2])
        self.assertEqual(err.code(), grpc.StatusCode.UNAVAILABLE)

    # verifies: VALIDATION.md 5.10 steps 4-5 — the freshness of a new update's blocks is decided
    # before it is decoded: a stale block wins over a malformed action, a fresh one does not.
    def test_freshness_is_decided_before_decoding(self):
        head = self.stub.head
        stale = self.scw_registration(head - 200)[2]
        stale.identity_update.actions.add()  # kind unset: malformed at step 5
        self.assertEqual(self.reason(self.publish_fails(stale)), R.REASON_INVALID_SIGNATURE)
        fresh = self.scw_registration(head - 1)[2]
        fresh.identity_update.actions.add()
        self.assertEqual(self.reason(self.publish_fails(fresh)), R.REASON_MALFORMED_PAYLOAD)


if __name__ == "__main__":
    unittest.main()
