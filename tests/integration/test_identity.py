"""Identity updates and GetInboxIds against the real binary (VALIDATION.md 5, 6; API-230..234,
API-270): the spec's computed identity log, updates signed at test time with independent tools
(identity_signers.py), tampering, the identifier projection, and two conflicting publishes for one
inbox (one commits, the other ABORTED). Runs on SQLite and, with XB_PG_PRIMARY, on PostgreSQL with
its streaming replica (GetInboxIds reads the replica there, OPS-009)."""
import os
import subprocess
import threading
import unittest

import grpc

import envelopes as E
import harness
import identity_signers as S
import identity_updates as U
from google.rpc import status_pb2
import health_pb2
from identity.api.v1 import identity_pb2
from identity.associations import association_pb2 as A
from xmtp.backend.v1 import backend_pb2

PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
QUERY = "/xmtp.backend.v1.QueryService/Query"
GET_INBOX_IDS = "/xmtp.backend.v1.IdentityService/GetInboxIds"
V3_GET_INBOX_IDS = "/xmtp.identity.api.v1.IdentityApi/GetInboxIds"
R = backend_pb2.PublishError
ETH = A.IDENTIFIER_KIND_ETHEREUM
PASSKEY = A.IDENTIFIER_KIND_PASSKEY
OTHER_KEYS = [bytes([k]) * 32 for k in (0x31, 0x32, 0x33, 0x34)]
# Signature field 4 (delegated_erc_191, reserved), length-delimited and empty: the retired kind.
RETIRED_FIELD_4 = b"\x22\x00"


def publish_error(rpc_error):
    for key, value in rpc_error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            return R.FromString(status.details[0].value)
    raise AssertionError("no PublishError detail")


class IdentityMixin:
    """Tests shared by the SQLite and PostgreSQL classes; each class has its own fresh store."""

    def call(self, path, request, response_type, timeout=20):
        with self.server.channel() as ch:
            resp, _ = harness.unary(ch, path, request, response_type, timeout=timeout)
        return resp

    def publish(self, *envs):
        return self.call(PUBLISH, backend_pb2.PublishRequest(envelopes=list(envs)),
                         backend_pb2.PublishResponse)

    def publish_fails(self, *envs):
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, PUBLISH, backend_pb2.PublishRequest(envelopes=list(envs)),
                              backend_pb2.PublishResponse, timeout=20)
        return ctx.exception

    def assert_rejected(self, err, index, reason):
        self.assertEqual(err.code(), grpc.StatusCode.INVALID_ARGUMENT, err.details())
        detail = publish_error(err)
        self.assertEqual((detail.index, detail.reason), (index, reason), err.details())

    def history(self, inbox_hex):
        topic = bytes([2]) + bytes.fromhex(inbox_hex)
        page = self.call(QUERY, backend_pb2.QueryRequest(queries=[
            backend_pb2.TopicQuery(topic=backend_pb2.Topic(topic=topic))]),
            backend_pb2.QueryResponse)
        return list(page.envelopes)

    def lookup(self, *pairs):
        req = backend_pb2.GetInboxIdsRequest()
        for identifier, kind in pairs:
            req.requests.add(identifier=identifier, identifier_kind=kind)
        resp = self.call(GET_INBOX_IDS, req, backend_pb2.GetInboxIdsResponse)
        self.assertEqual([(r.identifier, r.identifier_kind) for r in resp.responses], list(pairs))
        return [r.inbox_id if r.HasField("inbox_id") else None for r in resp.responses]

    def lookup_eventually(self, pairs, expected):
        """GetInboxIds may read a lagging replica (API known limitations): wait for it."""
        harness.wait_for(lambda: self.lookup(*pairs) == expected, 20, "the projection")

    def lookup_fails(self, *pairs):
        req = backend_pb2.GetInboxIdsRequest()
        for identifier, kind in pairs:
            req.requests.add(identifier=identifier, identifier_kind=kind)
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, GET_INBOX_IDS, req, backend_pb2.GetInboxIdsResponse)
        return ctx.exception

    # verifies: API-270 over the V3 IdentityApi (issue 33): the same answers with the V3 field
    # numbers (inbox_id 2, identifier_kind 3), the same normalization and bounds.
    def test_v3_get_inbox_ids(self):
        key = os.urandom(32)  # a wallet of its own: other tests register wallet
        wallet = S.eth_address(key)
        inbox, update = U.registration(int.from_bytes(os.urandom(6), "big"), wallet_key=key,
                                       installation_seed=os.urandom(32))
        self.publish(U.envelope(update))
        self.lookup_eventually([(wallet, ETH)], [inbox])
        req = identity_pb2.GetInboxIdsRequest()
        req.requests.add(identifier=wallet.upper().replace("0X", "0x"), identifier_kind=ETH)
        req.requests.add(identifier="0x" + "ab" * 20, identifier_kind=ETH)
        req.requests.add(identifier=wallet)  # UNSPECIFIED reads as Ethereum
        resp = self.call(V3_GET_INBOX_IDS, req, identity_pb2.GetInboxIdsResponse)
        self.assertEqual(
            [(r.identifier, r.identifier_kind, r.inbox_id if r.HasField("inbox_id") else None)
             for r in resp.responses],
            [(wallet.upper().replace("0X", "0x"), ETH, inbox), ("0x" + "ab" * 20, ETH, None),
             (wallet, A.IDENTIFIER_KIND_UNSPECIFIED, inbox)])
        # The V3 response's field numbers, read off the wire: 2 = inbox_id, 3 = kind.
        raw = resp.responses[0].SerializeToString()
        self.assertIn(b"\x12" + bytes([len(inbox)]) + inbox.encode(), raw)
        self.assertIn(b"\x18" + bytes([ETH]), raw)
        bad = identity_pb2.GetInboxIdsRequest()
        bad.requests.add(identifier="zz", identifier_kind=PASSKEY)
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, V3_GET_INBOX_IDS, bad, identity_pb2.GetInboxIdsResponse)
        self.assertEqual((ctx.exception.code(), ctx.exception.details()),
                         (grpc.StatusCode.INVALID_ARGUMENT, "malformed identifier"))

    # verifies: IDENT-005, API-270, VALIDATION.md 8.2 (the computed identity log, in order)
    def test_spec_identity_log(self):
        inbox = U.LOG["inbox_id"]
        first = self.publish(U.spec_envelope(1))
        self.assertEqual(first.envelope_metas[0].message_hash.sha256.hex(),
                         U.LOG["update1"]["message_hash"])
        self.lookup_eventually([(U.WALLET, ETH)], [inbox])
        # Ethereum lookups are case-insensitive; UNSPECIFIED reads as Ethereum; echo as sent.
        self.assertEqual(self.lookup((U.WALLET.upper().replace("0X", "0x"), 0),
                                     (U.WALLET, ETH), (U.WALLET, ETH)), [inbox] * 3)
        self.publish(U.spec_envelope(2))
        # Republishing update 1 is a stored duplicate: same metadata (API-222).
        again = self.publish(U.spec_envelope(1))
        self.assertEqual(again.envelope_metas[0], first.envelope_metas[0])
        # A modified update 1 (its valid v = 0/1 alias) is CreateInbox on an existing inbox.
        modified = U.spec_envelope(1)
        for action in modified.identity_update.actions:
            for sig in (action.create_inbox.initial_identifier_signature,
                        action.add.existing_member_signature):
                if sig.HasField("erc_191"):
                    b = bytearray(sig.erc_191.bytes)
                    b[64] -= 27
                    sig.erc_191.bytes = bytes(b)
        self.assert_rejected(self.publish_fails(modified), 0, R.REASON_INVALID_IDENTITY_UPDATE)
        # Update 2 replayed with the other v form: the canonical replay key was seen (IDENT-050).
        replay = U.spec_envelope(2)
        sig = replay.identity_update.actions[0].revoke.recovery_identifier_signature.erc_191
        b = bytearray(sig.bytes)
        b[64] -= 27
        sig.bytes = bytes(b)
        self.assert_rejected(self.publish_fails(replay), 0, R.REASON_INVALID_IDENTITY_UPDATE)
        third = self.publish(U.spec_envelope(3))
        self.assertEqual(third.envelope_metas[0].message_hash.sha256.hex(),
                         U.LOG["update3"]["message_hash"])
        passkey = U.LOG["update3"]["passkey_public_key"]
        self.lookup_eventually([(passkey.upper(), PASSKEY), (passkey, ETH)], [inbox, None])
        self.assertEqual(len(self.history(inbox)), 3)

    # verifies: VALIDATION.md 5.5 (tampered signatures never reach the store)
    def test_tampered_registration_is_rejected_and_nothing_is_stored(self):
        inbox, update = U.registration(nonce=int.from_bytes(os.urandom(6), "big"))
        sig = update.actions[1].add.new_member_signature.installation_key
        b = bytearray(sig.bytes)
        b[10] ^= 1
        sig.bytes = bytes(b)
        gid = os.urandom(16)
        err = self.publish_fails(E.group_message(gid, 1, b"x"), U.envelope(update))
        self.assert_rejected(err, 1, R.REASON_INVALID_SIGNATURE)
        self.assertEqual(self.history(inbox), [])
        # Signed by another wallet than the one it creates: a signer mismatch.
        inbox, update = U.registration(nonce=int.from_bytes(os.urandom(6), "big"))
        other = U.erc191(OTHER_KEYS[0], "not the text")
        update.actions[0].create_inbox.initial_identifier_signature.CopyFrom(other)
        self.assert_rejected(self.publish_fails(U.envelope(update)), 0,
                             R.REASON_INVALID_IDENTITY_UPDATE)
        # The retired delegated kind (field 4, reserved) alone and an upper-case address are
        # malformed (5.2).
        inbox, update = U.registration(nonce=int.from_bytes(os.urandom(6), "big"))
        update.actions[0].create_inbox.initial_identifier_signature.ParseFromString(RETIRED_FIELD_4)
        self.assert_rejected(self.publish_fails(U.envelope(update)), 0,
                             R.REASON_MALFORMED_PAYLOAD)
        inbox, update = U.registration(nonce=int.from_bytes(os.urandom(6), "big"))
        update.actions[0].create_inbox.initial_identifier = U.WALLET.upper().replace("0X", "0x")
        self.assert_rejected(self.publish_fails(U.envelope(update)), 0,
                             R.REASON_MALFORMED_PAYLOAD)
        self.assertEqual(self.history(inbox), [])

    # verifies: VALIDATION.md 5.2, 5.5.5 — a retired field-4 entry after a listed signature is
    # ignored (it would replace it if it were a oneof member) and the canonical bytes drop it.
    def test_retired_field_next_to_a_listed_signature_is_ignored(self):
        inbox, update = U.registration(nonce=int.from_bytes(os.urandom(6), "big"))
        sig = update.actions[0].create_inbox.initial_identifier_signature
        listed = sig.SerializeToString()
        sig.MergeFromString(RETIRED_FIELD_4)
        self.assertEqual(sig.SerializeToString(), listed + RETIRED_FIELD_4)
        self.assertEqual(len(self.publish(U.envelope(update)).envelope_metas), 1)
        [stored] = self.history(inbox)
        stored_sig = stored.envelope.identity_update.actions[0].create_inbox
        self.assertEqual(stored_sig.initial_identifier_signature.SerializeToString(), listed)

    # verifies: API-223 — a lower-index identity failure decides over a later parse failure.
    def test_lower_index_identity_failure_decides(self):
        inbox, update = U.registration(nonce=int.from_bytes(os.urandom(6), "big"))
        update.client_timestamp_ns += 10**9  # every signature now covers another text
        bad_group = backend_pb2.ClientEnvelope(group_message=backend_pb2.GroupMessage(data=b"\x00"))
        err = self.publish_fails(U.envelope(update), bad_group)
        self.assert_rejected(err, 0, R.REASON_INVALID_SIGNATURE)

    # verifies: API-270 — the newest live association wins; revoking it exposes the older one.
    def test_lookup_follows_the_latest_live_association(self):
        w1, w2 = OTHER_KEYS[0], OTHER_KEYS[1]
        a1, a2 = S.eth_address(w1), S.eth_address(w2)
        nonce = int.from_bytes(os.urandom(6), "big")
        inbox_a, reg_a = U.registration(nonce, wallet_key=w1, installation_seed=os.urandom(32))
        self.publish(U.envelope(reg_a))
        self.publish(U.envelope(U.add_wallet(inbox_a, 2, w1, w2)))
        self.lookup_eventually([(a1, ETH), (a2, ETH)], [inbox_a, inbox_a])
        inbox_b, reg_b = U.registration(nonce, wallet_key=w2, installation_seed=os.urandom(32))
        self.publish(U.envelope(reg_b))
        self.lookup_eventually([(a2, ETH)], [inbox_b])
        self.publish(U.envelope(U.revoke_wallet(inbox_b, 3, w2, a2)))
        self.lookup_eventually([(a2, ETH), (a1, ETH)], [inbox_a, inbox_a])
        self.publish(U.envelope(U.revoke_wallet(inbox_a, 4, w1, a2)))
        self.lookup_eventually([(a2, ETH), (a1, ETH)], [None, inbox_a])

    # verifies: API-270 bounds and normalization errors (VALIDATION.md 6)
    def test_lookup_limits_and_malformed_identifiers(self):
        self.assertEqual(self.lookup(), [])
        self.assertEqual(self.lookup(("not an address", ETH), ("", 0)), [None, None])
        err = self.lookup_fails(*[("0x" + "0" * 40, ETH)] * 251)
        self.assertEqual(err.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(len(self.lookup(*[("0x" + "0" * 40, ETH)] * 250)), 250)
        err = self.lookup_fails(("zz", PASSKEY))
        self.assertEqual(err.code(), grpc.StatusCode.INVALID_ARGUMENT)
        err = self.lookup_fails(("0x" + "0" * 40, 7))
        self.assertEqual(err.code(), grpc.StatusCode.INVALID_ARGUMENT)

    # verifies: API-232 — two conflicting updates validated against one head: one commits, the
    # other is ABORTED, and the projection agrees with the stored history afterwards.
    def test_conflicting_updates_one_commits_the_other_is_aborted(self):
        w1 = OTHER_KEYS[2]
        nonce = int.from_bytes(os.urandom(6), "big")
        inbox, reg = U.registration(nonce, wallet_key=w1, installation_seed=os.urandom(32))
        self.publish(U.envelope(reg))
        candidates = [OTHER_KEYS[0], OTHER_KEYS[3]]
        updates = [U.add_wallet(inbox, 10 + i, w1, k) for i, k in enumerate(candidates)]
        results = [None, None]

        def run(i):
            with self.server.channel() as ch:
                try:
                    harness.unary(ch, PUBLISH, backend_pb2.PublishRequest(
                        envelopes=[U.envelope(updates[i])]), backend_pb2.PublishResponse,
                        timeout=40)
                    results[i] = grpc.StatusCode.OK
                except grpc.RpcError as e:
                    results[i] = e.code()

        self.hold()
        threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
        try:
            for t in threads:
                t.start()
            self.wait_both_validated()
        finally:
            self.release()
            for t in threads:
                t.join(40)
        self.assertEqual(sorted(r.name for r in results), ["ABORTED", "OK"])
        winner = results.index(grpc.StatusCode.OK)
        stored = self.history(inbox)
        self.assertEqual(len(stored), 2)
        self.assertEqual(stored[1].envelope.identity_update, updates[winner])
        addresses = [S.eth_address(k) for k in candidates]
        expected = [inbox if i == winner else None for i in (0, 1)]
        self.lookup_eventually([(a, ETH) for a in addresses], expected)
        # The loser rebuilt against the new head now commits (the client's ABORTED path).
        self.publish(U.envelope(updates[1 - winner]))
        self.lookup_eventually([(a, ETH) for a in addresses], [inbox, inbox])


def _hook(server, name, arg=""):
    with server.channel() as ch:
        resp, _ = harness.unary(ch, "/xb.test.v1.TestService/" + name,
                                health_pb2.HealthCheckRequest(service=arg),
                                health_pb2.HealthCheckResponse)
    return resp.status == health_pb2.HealthCheckResponse.SERVING


class GateMixin:
    """Holds validated identity publishes before their commit (xmtp-backend-testing's gate)."""
    binary = harness.TEST_BINARY

    def hold(self):
        _hook(self.server, "HoldIdentityCommits")

    def wait_both_validated(self):
        harness.wait_for(lambda: _hook(self.server, "ParkedIdentityCommits", "2"), 30,
                         "two validated identity publishes")

    def release(self):
        _hook(self.server, "ReleaseIdentityCommits")


class SqliteIdentityTest(GateMixin, IdentityMixin, harness.ServerTestCase):
    pass


@unittest.skipUnless(os.environ.get("XB_PG_PRIMARY"), "needs XB_PG_PRIMARY")
class PostgresIdentityTest(GateMixin, IdentityMixin, harness.PgServerTestCase):
    pass


if __name__ == "__main__":
    unittest.main()
