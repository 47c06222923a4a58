"""Subscribe and SubscribeStatic delivery through the real binary, on SQLite and on PostgreSQL
with its streaming replica (API.md 3.8, 3.9; STORE.md 5.5).

Each behaviour is a mixin run once per engine. The PostgreSQL classes read streams from the
replica, so every test that needs a head captured after a publish first waits until QueryNewest
(which reads the same copy, OPS-009) shows it.

Workload sizes shrink under sanitizer builds (stream_client.SCALE).
"""
import random
import subprocess
import threading
import unittest

import grpc

import envelopes as E
import harness
import stream_client as S
from xmtp.backend.v1 import backend_pb2


class DeliveryMixin(S.SharedServer):
    """Default limits and keepalive."""

    # verifies: API-254, API-252, API-260, STORE.md 5.5 (ARC-075, ARC-076: the seam between
    # catch-up and live) — publishers write continuously while streams of both kinds open at
    # chosen moments with old cursors, bidi streams adding their topics over several Updates.
    # After publishing stops, every stream delivers per topic exactly the ids a final Query
    # returns above its cursor: ascending, no duplicate, no gap.
    def test_seam_concurrent_publishers_and_late_opens(self):
        rng = random.Random(1108)
        n_topics = 50
        publishers = 4
        requests_each = S.scaled(120, 30)
        n_streams = 20
        label = "seam"
        gids = [S.gid(label, t) for t in range(n_topics)]
        topics = [E.group_topic(g) for g in gids]

        published = {t: [] for t in topics}  # ids from publish responses
        lock = threading.Condition()
        progress = [0]
        errors = []

        # Some history first, so that cursor 0 means a real catch-up.
        with self.server.channel() as ch:
            envs = [E.group_message(g, 1, b"seam-pre-%d-%d" % (i, k))
                    for i, g in enumerate(gids) for k in range(2)]
            ids = S.publish(ch, envs)
            for env_topic, i in zip([t for t in topics for _ in range(2)], ids):
                published[env_topic].append(i)

        def publisher(p):
            prng = random.Random(p)
            try:
                with self.server.channel() as ch:
                    for r in range(requests_each):
                        chosen = prng.sample(range(n_topics), prng.randint(1, 3))
                        envs, env_topics = [], []
                        for t in chosen:
                            for k in range(prng.randint(1, 2)):
                                envs.append(E.group_message(
                                    gids[t], 1, b"seam-p%d-r%d-t%d-k%d" % (p, r, t, k)))
                                env_topics.append(topics[t])
                        ids = S.publish(ch, envs)
                        with lock:
                            for t, i in zip(env_topics, ids):
                                published[t].append(i)
                            progress[0] += 1
                            lock.notify_all()
            except Exception as e:  # noqa: BLE001 - reported by the main thread
                errors.append(repr(e))
                with lock:
                    progress[0] = 1 << 30
                    lock.notify_all()

        total = publishers * requests_each
        # The plan: each stream opens when publishing reached a chosen point; bidi streams send
        # their later Updates at later points. Topics of one stream are disjoint across Updates.
        plan = []  # (threshold, stream index, action, payload)
        streams = []
        for s in range(n_streams):
            chosen = rng.sample(range(n_topics), rng.randint(4, 12))
            kind = "static" if s % 2 == 0 else "bidi"
            opens_at = rng.randint(0, total * 3 // 4)
            info = {"kind": kind, "cursors": {}, "updates": [], "stream": None}
            streams.append(info)
            if kind == "static":
                plan.append((opens_at, s, "open", [topics[t] for t in chosen]))
            else:
                parts = rng.randint(2, 3)
                groups = [chosen[i::parts] for i in range(parts)]
                plan.append((opens_at, s, "open", None))
                at = opens_at
                for u, group in enumerate(groups):
                    at = min(total, at + rng.randint(0, total // 6))
                    plan.append((at, s, "update", (u + 1, [topics[t] for t in group])))
        plan.sort(key=lambda p: (p[0], p[1], p[2] != "open"))
        channels = []

        def pick_cursor(topic):
            choice = rng.randrange(3)
            with lock:
                own = list(published[topic])
                every = [i for ids in published.values() for i in ids]
            if choice == 0 or not own:
                return 0
            if choice == 1:
                return rng.choice(own)
            return rng.choice(every)

        def opener():
            try:
                for threshold, s, action, payload in plan:
                    with lock:
                        if not lock.wait_for(lambda: progress[0] >= threshold, S.READ_TIMEOUT * 4):
                            errors.append("publishing stalled")
                            return
                    info = streams[s]
                    if action == "open":
                        ch = self.server.channel()
                        channels.append(ch)
                        if info["kind"] == "static":
                            adds = [(t, pick_cursor(t)) for t in payload]
                            info["cursors"].update(adds)
                            info["order"] = [t for t, _ in adds]
                            info["stream"] = S.Static(ch, adds)
                        else:
                            info["stream"] = S.Bidi(ch)
                    else:
                        update_id, group = payload
                        adds = [(t, pick_cursor(t)) for t in group]
                        info["cursors"].update(adds)
                        info["updates"].append((update_id, [t for t, _ in adds]))
                        info["stream"].update(update_id, adds=adds)
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

        threads = [threading.Thread(target=publisher, args=(p,)) for p in range(publishers)]
        open_thread = threading.Thread(target=opener)
        open_thread.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join(S.READ_TIMEOUT * 10)
        open_thread.join(S.READ_TIMEOUT * 4)
        self.assertEqual(errors, [])
        self.assertFalse(open_thread.is_alive())

        with self.server.channel() as ch:
            final = {t: S.read_topic(ch, t) for t in topics}
        for t in topics:
            self.assertEqual(final[t], sorted(published[t]))

        phases = {"catch_up": 0, "live": 0}
        try:
            for s, info in enumerate(streams):
                with self.subTest(stream=s, kind=info["kind"]):
                    self._check_seam_stream(info, final, phases)
            # The workload crossed the seam: rows at or below targets and rows above them.
            self.assertGreater(phases["catch_up"], 0, phases)
            self.assertGreater(phases["live"], 0, phases)
        finally:
            for info in streams:
                if info["stream"] is not None:
                    info["stream"].cancel()
            for ch in channels:
                ch.close()

    def _check_seam_stream(self, info, final, phases):
        stream = info["stream"]
        cursors = info["cursors"]
        expected = {t: [i for i in final[t] if i > c] for t, c in cursors.items()}
        got = {t: [] for t in cursors}
        applied_topics = set()
        started = stream.frame()
        self.assertEqual(started.WhichOneof("response"), "started")
        if info["kind"] == "static":
            # API-260: one target per requested topic, in request order.
            targets = list(started.started.targets)
            self.assertEqual([x.topic.topic for x in targets], info["order"])
            for x in targets:
                self.assertTrue(x.through_sequence_id == 0 or
                                x.through_sequence_id in final[x.topic.topic])
            applied_topics = set(cursors)
            target_of = {x.topic.topic: x.through_sequence_id for x in targets}
        else:
            target_of = {}
        pending_updates = list(info["updates"])

        def done():
            return not pending_updates and all(
                (got[t][-1] if got[t] else 0) >= (expected[t][-1] if expected[t] else 0)
                for t in cursors)

        while not done():
            f = stream.frame()
            kind = f.WhichOneof("response")
            if kind == "applied":
                # API-252: one Applied per Update, in order; targets = the newly added topics.
                update_id, added = pending_updates.pop(0)
                self.assertEqual(f.applied.id, update_id)
                self.assertEqual([x.topic.topic for x in f.applied.added_targets], added)
                for x in f.applied.added_targets:
                    self.assertTrue(x.through_sequence_id == 0 or
                                    x.through_sequence_id in final[x.topic.topic])
                    target_of[x.topic.topic] = x.through_sequence_id
                applied_topics.update(added)
            elif kind == "messages":
                for env in f.messages.envelopes:
                    t = env.meta.topic.topic
                    # API-252: no Messages of a registration before its Applied.
                    self.assertIn(t, applied_topics)
                    got[t].append(S.sid(env))
            else:
                self.fail("unexpected frame %s" % kind)
        # Anything already queued behind must not be a duplicate either.
        while True:
            f = stream.poll(0.05)
            if f is None or isinstance(f, S.Ended):
                self.assertIsNone(f)
                break
            for env in S.envelopes_of(f):
                got[env.meta.topic.topic].append(S.sid(env))
        for t in cursors:
            self.assertEqual(got[t], expected[t], "cursor %d" % cursors[t])
            for i in got[t]:
                phases["catch_up" if i <= target_of[t] else "live"] += 1

    # verifies: API-252 — one Update with 10,000 adds: Applied lists 10,000 targets in add order,
    # each with the head at registration; history then live envelopes arrive (sample).
    def test_ten_thousand_topics_in_one_update(self):
        n = 10000
        label = "tk"
        topics = [S.gtopic(label, i) for i in range(n)]
        with_history = list(range(0, n, 100))
        heads = {t: 0 for t in topics}
        history = {}
        with self.server.channel() as ch:
            envs, owners = [], []
            for i in with_history:
                for k in range(2):
                    envs.append(E.group_message(S.gid(label, i), 1, b"tk-h-%d-%d" % (i, k)))
                    owners.append(topics[i])
            ids = S.publish(ch, envs)
            for t, i in zip(owners, ids):
                history.setdefault(t, []).append(i)
                heads[t] = i
            S.wait_replica_shows(ch, {topics[i]: heads[topics[i]] for i in with_history})
            # Half the history topics start after their first row.
            cursors = {t: 0 for t in topics}
            for i in with_history[::2]:
                cursors[topics[i]] = history[topics[i]][0]

            stream = S.Bidi(ch)
            try:
                stream.started(self)
                stream.update(1, adds=[(t, cursors[t]) for t in topics])
                messages = []
                applied = stream.applied(self, 1, messages)
                self.assertEqual(len(applied.added_targets), n)
                self.assertEqual([x.topic.topic for x in applied.added_targets], topics)
                self.assertEqual([x.through_sequence_id for x in applied.added_targets],
                                 [heads[t] for t in topics])
                self.assertEqual(messages, [])

                expected = {t: [i for i in ids if i > cursors[t]] for t, ids in history.items()}
                got = {}

                def read_until(want):
                    while any(len(got.get(t, [])) < len(ids) for t, ids in want.items()):
                        for env in S.envelopes_of(stream.frame()):
                            got.setdefault(env.meta.topic.topic, []).append(S.sid(env))

                read_until(expected)
                self.assertEqual(got, expected)
                # Live: a sample of topics with and without history.
                sample = list(dict.fromkeys([topics[i] for i in range(0, n, 997)] +
                                            [topics[i] for i in with_history[:10]]))
                live_envs = [E.group_message(t[1:], 1, b"tk-live-%d" % k)
                             for k, t in enumerate(sample)]
                live_ids = S.publish(ch, live_envs)
                for t, i in zip(sample, live_ids):
                    expected.setdefault(t, []).append(i)
                read_until(expected)
                self.assertEqual(got, expected)
            finally:
                stream.cancel()

    # verifies: API-260 — the Started frame of a 10,000-topic static stream lists every topic in
    # request order (empty topics with target 0) before any Messages.
    def test_static_started_lists_every_topic_in_request_order(self):
        n = 10000
        label = "ts"
        topics = [S.gtopic(label, i) for i in range(n)]
        rng = random.Random(3)
        order = topics[:]
        rng.shuffle(order)
        with self.server.channel() as ch:
            ids = S.publish(ch, [E.group_message(S.gid(label, i), 1, b"ts-%d" % i)
                                 for i in range(0, n, 500)])
            heads = dict(zip([topics[i] for i in range(0, n, 500)], ids))
            S.wait_replica_shows(ch, heads)
            stream = S.Static(ch, [(t, 0) for t in order])
            try:
                started = stream.started(self)
                self.assertEqual([x.topic.topic for x in started.targets], order)
                self.assertEqual([x.through_sequence_id for x in started.targets],
                                 [heads.get(t, 0) for t in order])
                got = []
                while len(got) < len(heads):
                    got.extend(S.sid(e) for e in S.envelopes_of(stream.frame()))
                self.assertEqual(sorted(got), sorted(ids))
            finally:
                stream.cancel()

    # verifies: API-252, API-253 — no-op and removes-only Updates get Applied; re-adding a
    # registered topic is not in added_targets and leaves it untouched; after the Applied of a
    # remove no envelope of it arrives; a later add starts from its own cursor. A cursor of
    # INT64_MAX is valid and yields nothing.
    def test_update_semantics(self):
        a, b, c, d, e = (S.gtopic("sem", i) for i in range(5))
        with self.server.channel() as ch:
            a_ids = S.publish(ch, [E.group_message(a[1:], 1, b"sem-a%d" % k) for k in range(2)])
            b_ids = S.publish(ch, [E.group_message(b[1:], 1, b"sem-b0")])
            e_ids = S.publish(ch, [E.group_message(e[1:], 1, b"sem-e0")])
            S.wait_replica_shows(ch, {a: a_ids[-1], b: b_ids[-1], e: e_ids[-1]})
            stream = S.Bidi(ch)
            try:
                stream.started(self)
                got = []
                stream.update(1, adds=[(a, 0), (b, b_ids[0])])
                applied = stream.applied(self, 1, got)
                self.assertEqual([(x.topic.topic, x.through_sequence_id)
                                  for x in applied.added_targets],
                                 [(a, a_ids[-1]), (b, b_ids[-1])])
                self.assertEqual(got, [])
                while len(got) < 2:
                    got.extend(S.envelopes_of(stream.frame()))
                self.assertEqual([(x.meta.topic.topic, S.sid(x)) for x in got],
                                 [(a, i) for i in a_ids])

                # No-op Update: Applied with no targets.
                stream.update(2)
                self.assertEqual(list(stream.applied(self, 2).added_targets), [])
                # Re-adding A (cursor ignored) with a new C: only C is a target.
                stream.update(3, adds=[(a, 0), (c, 0)])
                applied = stream.applied(self, 3, got)
                self.assertEqual([(x.topic.topic, x.through_sequence_id)
                                  for x in applied.added_targets], [(c, 0)])
                # Removes-only (one registered, one never registered): Applied, no targets.
                stream.update(4, removes=[c, d])
                self.assertEqual(list(stream.applied(self, 4, got).added_targets), [])
                self.assertEqual(len(got), 2)  # A was not delivered again by the re-add

                # After the remove's Applied, nothing of C; A's live row still arrives, after C's
                # row in id order, so a leaked C row would have been dispatched first.
                c_ids = S.publish(ch, [E.group_message(c[1:], 1, b"sem-c0")])
                a_live = S.publish(ch, [E.group_message(a[1:], 1, b"sem-a2")])
                live = []
                while not live:
                    live.extend(S.envelopes_of(stream.frame()))
                self.assertEqual([(x.meta.topic.topic, S.sid(x)) for x in live], [(a, a_live[0])])

                # Re-add C after its removal: a new registration from its own cursor.
                S.wait_replica_shows(ch, {c: c_ids[0], a: a_live[0]})
                stream.update(5, adds=[(c, 0)])
                applied = stream.applied(self, 5)
                self.assertEqual([(x.topic.topic, x.through_sequence_id)
                                  for x in applied.added_targets], [(c, c_ids[0])])
                again = []
                while not again:
                    again.extend(S.envelopes_of(stream.frame()))
                self.assertEqual([(x.meta.topic.topic, S.sid(x)) for x in again], [(c, c_ids[0])])
                # Remove A and add it back from its first id: A's later rows come again, in order.
                stream.update(6, removes=[a])
                stream.applied(self, 6)
                stream.update(7, adds=[(a, a_ids[0])])
                applied = stream.applied(self, 7)
                self.assertEqual([(x.topic.topic, x.through_sequence_id)
                                  for x in applied.added_targets], [(a, a_live[0])])
                again = []
                while len(again) < 2:
                    again.extend(S.envelopes_of(stream.frame()))
                self.assertEqual([(x.meta.topic.topic, S.sid(x)) for x in again],
                                 [(a, a_ids[1]), (a, a_live[0])])
                # A cursor of INT64_MAX is valid: the target is the head, nothing is delivered.
                stream.update(8, adds=[(e, S.INT64_MAX)])
                applied = stream.applied(self, 8)
                self.assertEqual([(x.topic.topic, x.through_sequence_id)
                                  for x in applied.added_targets], [(e, e_ids[0])])
                # API-259: half-close ends the stream OK; nothing else was sent meanwhile.
                stream.close()
                ended, rest = stream.until_end()
                self.assertEqual(ended.code, grpc.StatusCode.OK, ended)
                self.assertEqual([f for f in rest if f.WhichOneof("response") != "ping"], [])
            finally:
                stream.cancel()

    # verifies: API-253, STORE.md 5.5 (ARC-074) — a registration removed in the middle of its
    # catch-up sends nothing after the remove's Applied, although its fetched rows may be in
    # flight; re-adding it (with a different cursor) starts a new registration from that cursor;
    # re-adding a topic that is still catching up ignores the new cursor.
    def test_remove_during_catch_up(self):
        rows = S.scaled(600, 200)
        big, other = S.gtopic("rmcu", 0), S.gtopic("rmcu", 1)
        blob = b"r" * 4000
        with self.server.channel() as ch:
            ids = S.publish_history(ch, big, rows, blob)
            other_ids = S.publish(ch, [E.group_message(other[1:], 1, b"rmcu-o%d" % k)
                                       for k in range(3)])
            S.wait_replica_shows(ch, {big: ids[-1], other: other_ids[-1]})
            stream = S.Bidi(ch)
            try:
                stream.started(self)
                stream.update(1, adds=[(big, 0), (other, 0)])
                # Sent back to back: the re-add (cursor ignored), then the remove.
                stream.update(2, adds=[(other, other_ids[1])])
                stream.update(3, removes=[big])
                before = []
                stream.applied(self, 1, before)
                self.assertEqual(list(stream.applied(self, 2, before).added_targets), [])
                stream.applied(self, 3, before)
                got_big = [S.sid(e) for e in before if e.meta.topic.topic == big]
                self.assertEqual(got_big, ids[:len(got_big)])
                # Re-add from the middle: exactly the ids above that cursor, in order, and
                # nothing of the old registration interleaved.
                middle = ids[rows // 2]
                stream.update(4, adds=[(big, middle)])
                after = []
                applied = stream.applied(self, 4, after)
                self.assertEqual([(x.topic.topic, x.through_sequence_id)
                                  for x in applied.added_targets], [(big, ids[-1])])
                self.assertEqual([e for e in after if e.meta.topic.topic == big], [])
                got_other = [S.sid(e) for e in before + after if e.meta.topic.topic == other]
                want_big = [i for i in ids if i > middle]
                got_big = []
                while len(got_big) < len(want_big) or len(got_other) < len(other_ids):
                    envs = S.envelopes_of(stream.frame())
                    got_big += [S.sid(e) for e in envs if e.meta.topic.topic == big]
                    got_other += [S.sid(e) for e in envs if e.meta.topic.topic == other]
                self.assertEqual(got_big, want_big)
                self.assertEqual(got_other, other_ids)  # the cursor of the re-add was ignored
            finally:
                stream.cancel()

    # verifies: API-261, STORE.md 5.5 — a history several times the stream's catch-up budget
    # (1 MiB queued at most on SQLite, 4 MiB on PostgreSQL) arrives whole and in order: each wave waits for the connection to
    # take the one before, and is woken when it does. Each frame must come well within the
    # keepalive interval (30 s by default): a lost wake-up would otherwise only show as a stream
    # that advances once per keepalive.
    def test_catch_up_larger_than_the_outbound_budget(self):
        rows = S.scaled(3000, 1200)
        t = S.gtopic("bigcu", 0)
        blob = b"b" * 4000
        with self.server.channel() as ch:
            ids = S.publish_history(ch, t, rows, blob)
            S.wait_replica_shows(ch, {t: ids[-1]})
            stream = S.Static(ch, [(t, 0)])
            try:
                started = stream.started(self)
                self.assertEqual(started.targets[0].through_sequence_id, ids[-1])
                self.assertEqual(stream.ids(len(ids), timeout=15), ids)
            finally:
                stream.cancel()

    def read_catch_up(self, ch, topic, cursor, expected):
        """Opens a SubscribeStatic at `cursor` and checks it delivers exactly `expected`, in order,
        then one live envelope after them."""
        stream = S.Static(ch, [(topic, cursor)])
        try:
            stream.started(self)
            self.assertEqual(stream.ids(len(expected), timeout=15), expected)
            live = S.publish(ch, [E.group_message(topic[1:], 1, b"live-%d" % len(expected))])
            self.assertEqual(stream.ids(1, timeout=15), live)
            return live
        finally:
            stream.cancel()

    # verifies: API-251, API-201 with the shared history cache (fanout/history_cache.h): after one
    # stream has read a topic's history, streams from cursors before, inside and at the end of
    # what it read, and past rows published since, each get exactly the ids above their cursor.
    def test_streams_sharing_history_get_exactly_their_rows(self):
        t = S.gtopic("share", 0)
        blob = b"s" * 2000
        with self.server.channel() as ch:
            every = S.publish_history(ch, t, S.scaled(2400, 900), blob)
            S.wait_replica_shows(ch, {t: every[-1]})
            every += self.read_catch_up(ch, t, 0, every)  # the first reader fills the cache
            every += S.publish_history(ch, t, 300, b"m" * 2000)  # new bytes: not duplicates
            S.wait_replica_shows(ch, {t: every[-1]})
            for cursor in (0, every[1], every[len(every) // 3], every[-302], every[-2]):
                every += self.read_catch_up(ch, t, cursor, [i for i in every if i > cursor])
                S.wait_replica_shows(ch, {t: every[-1]})

    # verifies: API-254, API.md 3.12 (limits.max_http2_streams default 100) — 100 concurrent
    # streams of both kinds on one HTTP/2 connection all get a live envelope.
    def test_hundred_streams_on_one_connection(self):
        t = S.gtopic("hund", 0)
        with S.own_channel(self.server) as ch:
            streams = []
            try:
                for i in range(100):
                    if i % 2:
                        s = S.Static(ch, [(t, 0)])
                        s.started(self)
                    else:
                        s = S.Bidi(ch)
                        s.started(self)
                        s.update(1, adds=[(t, 0)])
                        s.applied(self, 1)
                    streams.append(s)
                with S.own_channel(self.server) as other:  # the first connection is full
                    live = S.publish(other, [E.group_message(t[1:], 1, b"hund-%d" % k)
                                             for k in range(3)])
                for s in streams:
                    self.assertEqual(s.ids(3), live)
            finally:
                for s in streams:
                    s.cancel()

    # verifies: API-259 — the stream stays open without registrations; half-closing it, also
    # while a registration is still catching up, ends it OK.
    def test_half_close_ends_ok(self):
        t = S.gtopic("half", 0)
        with self.server.channel() as ch:
            ids = S.publish(ch, [E.group_message(t[1:], 1, b"half-%d" % k) for k in range(50)])
            S.wait_replica_shows(ch, {t: ids[-1]})
            bare = S.Bidi(ch)
            busy = S.Bidi(ch)
            try:
                bare.started(self)
                self.assertIsNone(bare.poll(0.5))  # open, nothing to say
                bare.close()
                ended, frames = bare.until_end()
                self.assertEqual(ended.code, grpc.StatusCode.OK)
                self.assertEqual(frames, [])

                busy.started(self)
                busy.update(1, adds=[(t, 0)])
                busy.close()
                ended, frames = busy.until_end()
                self.assertEqual(ended.code, grpc.StatusCode.OK, ended)
                self.assertEqual(frames[0].applied.id, 1)
                frames = frames[1:]
                delivered = [S.sid(e) for f in frames for e in S.envelopes_of(f)]
                self.assertEqual(delivered, ids[:len(delivered)])  # a prefix, in order
            finally:
                bare.cancel()
                busy.cancel()


class SmallFramesMixin(S.SharedServer):
    """Small frames (max_response_bytes) and small stream bounds, so that fairness and every bound
    is cheap to reach. OPS-021 holds: 16000 + 256 <= 20000."""
    extra_config = """[limits]
max_envelope_bytes = 16000
max_response_bytes = 20000
max_update_adds = 4
max_update_removes = 3
max_stream_topics = 6
max_static_topics = 5
"""

    # verifies: API-261 — registrations with history added in one Update: while two or more have
    # undelivered envelopes at or below their targets, none gets a second Messages frame of them
    # before every other one got one (read as rounds: frame counts never differ by two). Frames
    # hold one or two envelopes of 6-15 KB, and the history spans several catch-up waves whose
    # byte-budget cuts fall at varying points, so the rounds must also hold across waves.
    def test_catch_up_is_fair(self):
        rows = S.scaled(400, 300)  # several 4 MiB catch-up waves even when scaled down
        topics = [S.gtopic("fair", i) for i in range(3)]
        rng = random.Random(261)
        with self.server.channel() as ch:
            ids = {t: [] for t in topics}
            for start in range(0, rows, 50):
                for t in topics:
                    ids[t] += S.publish(ch, [E.group_message(
                        t[1:], 1, b"%d-" % k + b"f" * rng.randint(6000, 15000))
                        for k in range(start, min(rows, start + 50))])
            S.wait_replica_shows(ch, {t: ids[t][-1] for t in topics})
            stream = S.Bidi(ch)
            try:
                stream.started(self)
                stream.update(1, adds=[(t, 0) for t in topics])
                applied = stream.applied(self, 1)
                targets = {x.topic.topic: x.through_sequence_id for x in applied.added_targets}
                self.assertEqual(targets, {t: ids[t][-1] for t in topics})
                frames_of = {t: 0 for t in topics}
                got = {t: [] for t in topics}
                frames = 0
                violations = []
                sequence = []
                first_violation = None
                while any(len(got[t]) < rows for t in topics):
                    f = stream.frame()
                    self.assertLessEqual(f.ByteSize(), 20000)  # max_response_bytes (API.md 3.13)
                    envs = S.envelopes_of(f)
                    frames += 1
                    in_frame = {e.meta.topic.topic for e in envs}
                    unfinished = {t for t in topics if len(got[t]) < rows}
                    for t in in_frame:
                        for u in unfinished - in_frame:
                            if frames_of[t] > frames_of[u]:
                                violations.append(
                                    "frame %d: topic %d got its frame %d while topic %d had %d" %
                                    (frames, topics.index(t), frames_of[t] + 1,
                                     topics.index(u), frames_of[u]))
                    for t in in_frame:
                        frames_of[t] += 1
                    for e in envs:
                        got[e.meta.topic.topic].append(S.sid(e))
                    # Which topic each envelope of each frame is: "0 12 0" = three frames.
                    sequence.append("".join(str(topics.index(e.meta.topic.topic)) for e in envs))
                    if violations and first_violation is None:
                        first_violation = frames
                self.assertEqual(got, ids)
                self.assertGreaterEqual(frames, rows)  # small frames: the check bites
                if violations:
                    self.fail("%d frames, %d violations, first: %s; frames around it: %s" % (
                        frames, len(violations), violations[0],
                        " ".join(sequence[max(0, first_violation - 10):first_violation + 4])))
            finally:
                stream.cancel()

    def _invalid(self, requests, applied_before=0):
        """Opens a stream, sends `requests`, expects `applied_before` Applied then
        INVALID_ARGUMENT."""
        with self.server.channel() as ch:
            stream = S.Bidi(ch)
            try:
                stream.started(self)
                for r in requests:
                    stream.send(r)
                ended, frames = stream.until_end()
                kinds = [f.WhichOneof("response") for f in frames]
                self.assertEqual(kinds, ["applied"] * applied_before)
                self.assertEqual(ended.code, grpc.StatusCode.INVALID_ARGUMENT, ended)
                self.assertTrue(ended.details)
            finally:
                stream.cancel()

    # verifies: API-251, API.md 3.12 (Subscribe bounds), API.md 3.13 (undecodable request) —
    # every invalid Update fails its stream INVALID_ARGUMENT; the valid ones before it are Applied.
    def test_invalid_updates(self):
        t = [S.gtopic("inv", i) for i in range(12)]
        bad_kind = bytes([9]) + S.gid("inv", 0)
        short = bytes([0]) + S.gid("inv", 0)[:15]
        welcome_short = bytes([1]) + b"k" * 16  # kind 1 wants 32 bytes

        def upd(uid, adds=(), removes=()):
            r = backend_pb2.SubscribeRequest()
            r.update.id = uid
            for item in adds:
                topic, cursor = item if isinstance(item, tuple) else (item, None)
                r.update.adds.append(S.topic_query(topic, cursor))
            for topic in removes:
                r.update.removes.append(backend_pb2.Topic(topic=topic))
            return r

        absent_topic = backend_pb2.SubscribeRequest()
        absent_topic.update.id = 1
        absent_topic.update.adds.append(backend_pb2.TopicQuery())
        cases = {
            "id_zero": ([upd(0, [t[0]])], 0),
            "id_repeated": ([upd(5, [t[0]]), upd(5, [t[1]])], 1),
            "id_lower": ([upd(5, [t[0]]), upd(4, [t[1]])], 1),
            "topic_twice_in_adds": ([upd(1, [(t[0], 0), (t[0], 3)])], 0),
            "topic_in_adds_and_removes": ([upd(1, [t[0]], [t[0]])], 0),
            "topic_twice_in_removes": ([upd(1, [], [t[0], t[0]])], 0),
            "bad_kind": ([upd(1, [bad_kind])], 0),
            "bad_length": ([upd(1, [short])], 0),
            "bad_length_welcome": ([upd(1, [welcome_short])], 0),
            "empty_topic": ([upd(1, [b""])], 0),
            "absent_topic": ([absent_topic], 0),
            "bad_topic_in_removes": ([upd(1, [], [short])], 0),
            "cursor_above_int64": ([upd(1, [(t[0], S.INT64_MAX + 1)])], 0),
            "cursor_max_uint64": ([upd(1, [(t[0], 2 ** 64 - 1)])], 0),
            "oneof_unset": ([backend_pb2.SubscribeRequest()], 0),
            "oneof_unset_after_update": ([upd(1, [t[0]]), b""], 1),
            "adds_over_bound": ([upd(1, t[:5])], 0),
            "removes_over_bound": ([upd(1, [], t[:4])], 0),
            "registered_over_bound": ([upd(1, t[:4]), upd(2, t[4:7])], 1),
            "registered_over_bound_later": (
                [upd(1, t[:4]), upd(2, t[4:6]), upd(3, [t[6]], [t[0]]), upd(4, [t[7]])], 3),
            "undecodable_frame": ([b"\x0a\x05\x08"], 0),
            "undecodable_wire_type": ([b"\xff\xff\xff\xff"], 0),
        }
        for name, (requests, applied_before) in cases.items():
            with self.subTest(case=name):
                self._invalid(requests, applied_before)

    # verifies: API.md 3.12 — each Subscribe bound holds at its value (not one below).
    def test_bounds_at_their_values_are_applied(self):
        t = [S.gtopic("bnd", i) for i in range(8)]
        with self.server.channel() as ch:
            stream = S.Bidi(ch)
            try:
                stream.started(self)
                stream.update(1, adds=t[:4])  # max_update_adds
                self.assertEqual(len(stream.applied(self, 1).added_targets), 4)
                stream.update(2, adds=t[4:6])  # max_stream_topics reached
                self.assertEqual(len(stream.applied(self, 2).added_targets), 2)
                stream.update(3, adds=t[:4])  # all registered already: nothing changes
                self.assertEqual(len(stream.applied(self, 3).added_targets), 0)
                stream.update(4, adds=[t[6]], removes=[t[0]])  # a swap at the bound: 6 after
                self.assertEqual([x.topic.topic for x in stream.applied(self, 4).added_targets],
                                 [t[6]])
                stream.update(5, removes=t[1:4])  # max_update_removes
                self.assertEqual(len(stream.applied(self, 5).added_targets), 0)
                stream.close()
                ended, _ = stream.until_end()
                self.assertEqual(ended.code, grpc.StatusCode.OK)
            finally:
                stream.cancel()

    # verifies: API-260, API.md 3.12 (max_static_topics), TOPIC-003 — invalid static requests.
    def test_invalid_static_requests(self):
        t = [S.gtopic("sinv", i) for i in range(6)]
        short = bytes([0]) + S.gid("sinv", 0)[:15]
        req = backend_pb2.SubscribeStaticRequest
        cases = {
            "empty_topics": req(),
            "repeated_topic": req(topics=[S.topic_query(t[0]), S.topic_query(t[1]),
                                          S.topic_query(t[0], 5)]),
            "over_max_static_topics": req(topics=[S.topic_query(x) for x in t]),
            "bad_kind": req(topics=[S.topic_query(bytes([7]) + S.gid("sinv", 0))]),
            "bad_length": req(topics=[S.topic_query(short)]),
            "empty_topic": req(topics=[S.topic_query(b"")]),
            "cursor_above_int64": req(topics=[S.topic_query(t[0], S.INT64_MAX + 1)]),
            "undecodable": b"\x0a\x05\x0a",
        }
        with self.server.channel() as ch:
            for name, request in cases.items():
                with self.subTest(case=name):
                    stream = S.Static(ch, request)
                    try:
                        ended, frames = stream.until_end()
                        self.assertEqual(frames, [])
                        self.assertEqual(ended.code, grpc.StatusCode.INVALID_ARGUMENT, ended)
                    finally:
                        stream.cancel()
            # At the bound, and INT64_MAX as a cursor: accepted.
            stream = S.Static(ch, req(topics=[S.topic_query(x, S.INT64_MAX) for x in t[:5]]))
            try:
                self.assertEqual(len(stream.started(self).targets), 5)
            finally:
                stream.cancel()


class ProtocolMixin(S.SharedServer):
    """Short keepalive and small frame buckets (API-255..258)."""
    extra_config = """[streams]
keepalive_interval_ms = 400
max_pong_wait_ms = 2000
[limits]
max_update_frames_per_second = 1
max_update_burst = 4
max_ping_frames_per_second = 1
max_ping_burst = 4
"""

    # verifies: API-255 (static) — an idle static stream gets Keepalive frames; API-250/260:
    # Started carries the configured interval.
    def test_static_idle_gets_keepalive(self):
        with self.server.channel() as ch:
            stream = S.Static(ch, [(S.gtopic("ka", 0), 0)])
            try:
                self.assertEqual(stream.started(self).keepalive_interval_ms, 400)
                for _ in range(3):
                    self.assertEqual(stream.frame().WhichOneof("response"), "keepalive")
            finally:
                stream.cancel()

    # verifies: API-255, API-257 — an idle bidi stream gets Ping; answering each Pong keeps it
    # open through several intervals (longer than max_pong_wait_ms in total); a Pong matching
    # nothing is ignored.
    def test_bidi_ping_answered_keeps_stream_open(self):
        with self.server.channel() as ch:
            stream = S.Bidi(ch)
            try:
                self.assertEqual(stream.started(self).keepalive_interval_ms, 400)
                stream.update(1, adds=[S.gtopic("ka", 1)])
                stream.applied(self, 1)
                nonces = []
                for _ in range(6):  # 6 x 400 ms > max_pong_wait_ms
                    f = stream.frame()
                    self.assertEqual(f.WhichOneof("response"), "ping", f)
                    nonces.append(f.ping.nonce)
                    stream.pong(f.ping.nonce + 1000000)  # matches nothing: ignored
                    stream.pong(f.ping.nonce)
                self.assertEqual(len(set(nonces)), len(nonces))
                stream.close()
                ended, frames = stream.until_end()
                self.assertEqual(ended.code, grpc.StatusCode.OK, ended)
            finally:
                stream.cancel()

    # verifies: API-257 — no Pong for the backend's Ping within max_pong_wait_ms:
    # DEADLINE_EXCEEDED, and never a second Ping while one is outstanding.
    def test_missing_pong_is_deadline_exceeded(self):
        with self.server.channel() as ch:
            stream = S.Bidi(ch)
            try:
                stream.started(self)
                ended, frames = stream.until_end()
                self.assertEqual(ended.code, grpc.StatusCode.DEADLINE_EXCEEDED, ended)
                self.assertEqual([f.WhichOneof("response") for f in frames], ["ping"])
            finally:
                stream.cancel()

    # verifies: API-256 — a client Ping is answered with a Pong carrying its nonce.
    def test_client_ping_is_answered(self):
        with self.server.channel() as ch:
            stream = S.Bidi(ch)
            try:
                stream.started(self)
                for nonce in (0, 7, 2 ** 64 - 1):
                    stream.ping(nonce)
                    while True:
                        f = stream.frame()
                        if f.WhichOneof("response") == "ping":
                            stream.pong(f.ping.nonce)
                            continue
                        self.assertEqual(f.WhichOneof("response"), "pong", f)
                        self.assertEqual(f.pong.nonce, nonce)
                        break
            finally:
                stream.cancel()

    def _burst(self, send, expect_kind):
        with self.server.channel() as ch:
            stream = S.Bidi(ch)
            try:
                stream.started(self)
                for i in range(4 + 10):  # burst 4, refill 1/s: 10 extra frames at once
                    send(stream, i)
                ended, frames = stream.until_end()
                self.assertEqual(ended.code, grpc.StatusCode.RESOURCE_EXHAUSTED, ended)
                answered = [f for f in frames if f.WhichOneof("response") == expect_kind]
                self.assertGreaterEqual(len(answered), 4)
                self.assertLess(len(answered), 14)
            finally:
                stream.cancel()

    # verifies: API-258 — Update frames beyond the bucket: RESOURCE_EXHAUSTED.
    def test_update_burst_is_resource_exhausted(self):
        self._burst(lambda s, i: s.update(i + 1), "applied")

    # verifies: API-258 — client Ping frames beyond their own bucket: RESOURCE_EXHAUSTED.
    def test_ping_burst_is_resource_exhausted(self):
        self._burst(lambda s, i: s.ping(i), "pong")

    # verifies: API-258 — Pong consumes neither bucket, and the buckets are separate: after many
    # Pongs a full burst of Updates and a full burst of Pings are all answered.
    def test_pong_consumes_no_bucket(self):
        with self.server.channel() as ch:
            stream = S.Bidi(ch)
            try:
                stream.started(self)
                for i in range(40):
                    stream.pong(i)
                for i in range(4):
                    stream.update(i + 1)
                for i in range(4):
                    stream.ping(100 + i)
                applied, pongs = [], []
                while len(applied) < 4 or len(pongs) < 4:
                    f = stream.frame()
                    kind = f.WhichOneof("response")
                    if kind == "applied":
                        applied.append(f.applied.id)
                    elif kind == "pong":
                        pongs.append(f.pong.nonce)
                    elif kind == "ping":
                        stream.pong(f.ping.nonce)
                    else:
                        self.fail(kind)
                self.assertEqual(applied, [1, 2, 3, 4])
                self.assertEqual(pongs, [100, 101, 102, 103])
                stream.close()
                ended, _ = stream.until_end()
                self.assertEqual(ended.code, grpc.StatusCode.OK, ended)
            finally:
                stream.cancel()


# ------------------------------------------------------------------------------------------------
# One class per engine and behaviour.

PG = unittest.skipUnless(S.HAVE_PG, "needs XB_PG_PRIMARY")


class SqliteDeliveryTest(DeliveryMixin, unittest.TestCase):
    pass


@PG
class PostgresDeliveryTest(DeliveryMixin, unittest.TestCase):
    engine_class = S.PostgresEngine


class SqliteSmallFramesTest(SmallFramesMixin, unittest.TestCase):
    pass


@PG
class PostgresSmallFramesTest(SmallFramesMixin, unittest.TestCase):
    engine_class = S.PostgresEngine


@PG
class PostgresReplicaLagStreamTest(S.SharedServer, unittest.TestCase):
    """Streams read the replica (OPS-009): with its replay paused they are an earlier view."""
    engine_class = S.PostgresEngine

    def replica_sql(self, sql):
        return subprocess.run(["psql", "-X", "-t", "-A", "-v", "ON_ERROR_STOP=1",
                               self.engine.databases[-1].replica, "-c", sql],
                              capture_output=True, text=True, check=True,
                              timeout=30).stdout.strip()

    # verifies: OPS-010, API-252, API-254 — while the replica lags, a new registration's target is
    # the lagged head (an earlier view, never a gap), open streams see nothing newer; once replay
    # resumes, every stream gets the rows above its target in order, exactly once.
    def test_streams_under_replica_lag(self):
        t = S.gtopic("lag", 0)
        with self.server.channel() as ch:
            first = S.publish(ch, [E.group_message(t[1:], 1, b"lag-0")])
            S.wait_replica_shows(ch, {t: first[0]})
            early = S.Static(ch, [(t, 0)])
            late = None
            try:
                self.assertEqual(early.started(self).targets[0].through_sequence_id, first[0])
                self.assertEqual([S.sid(e) for e in S.envelopes_of(early.frame())], first)
                self.replica_sql("SELECT pg_wal_replay_pause()")
                try:
                    harness.wait_for(lambda: self.replica_sql(
                        "SELECT pg_get_wal_replay_pause_state()") == "paused", S.READ_TIMEOUT,
                        "replay to pause")
                    more = S.publish(ch, [E.group_message(t[1:], 1, b"lag-%d" % k)
                                          for k in range(1, 4)])
                    self.assertEqual(S.read_topic(ch, t), first + more)  # the primary has them
                    late = S.Bidi(ch)
                    late.started(self)
                    late.update(1, adds=[(t, 0)])
                    applied = late.applied(self, 1)
                    self.assertEqual(applied.added_targets[0].through_sequence_id, first[0])
                    self.assertEqual([S.sid(e) for e in S.envelopes_of(late.frame())], first)
                finally:
                    self.replica_sql("SELECT pg_wal_replay_resume()")
                for stream, want in ((early, more), (late, more)):
                    self.assertEqual(stream.ids(len(want)), want)
            finally:
                early.cancel()
                if late is not None:
                    late.cancel()


class SqliteProtocolTest(ProtocolMixin, unittest.TestCase):
    pass


@PG
class PostgresProtocolTest(ProtocolMixin, unittest.TestCase):
    engine_class = S.PostgresEngine


if __name__ == "__main__":
    unittest.main()
