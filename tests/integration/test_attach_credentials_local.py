"""The local credential sources end to end (ATTACH.md section 7, ATCH-073): static with env:NAME
values, environment, profile (shared config and credentials files), process (a rotating
credential, a failing one) and default_chain picking the environment first. Every case signs a
CreateUpload, sends the presigned PUT to the strict S3 fake (which verifies the signature with
botocore), and checks that no credential value reaches the server's log or stderr at DEBUG."""
import os
import stat
import tempfile
import threading
import time
import unittest

import grpc

import attach_support as A

BODY = b"attachment ciphertext for the credential suite"
PROCESS_SECRET = "process-secret-" + "p" * 24


class LocalCredentialsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="xb-creds-")
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, text, executable=False):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        if executable:
            os.chmod(path, stat.S_IRWXU)
        return path

    def server(self, s3, credentials_toml, env, server_extra=""):
        """A started server whose environment is ours plus `env` (AWS_* of ours removed)."""
        full = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        full["HOME"] = self.tmp.name  # no ~/.aws of the machine's user
        full.update(env)
        server = A.new_server(A.attachments_toml(s3.endpoint, credentials_toml), env=full,
                              server_extra=server_extra)
        server.start()
        self.addCleanup(server.tmp.cleanup)
        self.addCleanup(server.check_sanitizers)
        self.addCleanup(server.kill)
        return server

    def upload(self, server, body=BODY):
        """CreateUpload for `body`, then the presigned PUT; returns the status of the PUT."""
        with server.channel() as ch:
            response, code, details = A.create_upload(ch, A.sha256(body), len(body))
        self.assertEqual(code, grpc.StatusCode.OK, details)
        return A.put(response, body)

    def assert_no_secrets(self, server, *values):
        text = "".join(server.lines) + server.stderr_text
        self.assertTrue(server.lines)  # DEBUG logging did write
        for value in values:
            self.assertNotIn(value, text)

    # verifies: ATCH-073 (static with env:NAME)
    def test_static_with_env_values(self):
        ak, sk, token = "AKIDSTATICENV01", "static-env-secret-" + "s" * 20, "STATICTOKEN" + "t" * 9
        with A.S3Fake({ak: (sk, token)}) as s3:
            server = self.server(
                s3, 'kind = "static"\naccess_key_id = "env:XB_IT_AK"\n'
                'secret_access_key = "env:XB_IT_SK"\nsession_token = "env:XB_IT_TOKEN"\n',
                {"XB_IT_AK": ak, "XB_IT_SK": sk, "XB_IT_TOKEN": token})
            self.assertEqual(self.upload(server), 200)
            self.assertEqual([key for _, key in s3.accepted], [ak])
            self.assert_no_secrets(server, ak, sk, token)

    # verifies: ATCH-073 (environment)
    def test_environment(self):
        ak, sk, token = "AKIDENVIRONMENT1", "env-secret-" + "e" * 28, "ENVTOKEN" + "x" * 12
        with A.S3Fake({ak: (sk, token)}) as s3:
            server = self.server(s3, 'kind = "environment"\n',
                                 {"AWS_ACCESS_KEY_ID": ak, "AWS_SECRET_ACCESS_KEY": sk,
                                  "AWS_SESSION_TOKEN": token})
            self.assertEqual(self.upload(server), 200)
            self.assertEqual([key for _, key in s3.accepted], [ak])
            self.assert_no_secrets(server, ak, sk, token)

    # verifies: ATCH-073 (environment: nothing set is UNAVAILABLE)
    def test_environment_unset_is_unavailable(self):
        with A.S3Fake({}) as s3:
            server = self.server(s3, 'kind = "environment"\n', {})
            with server.channel() as ch:
                _, code, details = A.create_upload(ch, A.sha256(BODY), len(BODY))
            self.assertEqual((code, details), A.UNAVAILABLE)

    # verifies: ATCH-073 (profile: config and credentials files, credentials file wins)
    def test_profile(self):
        ak, sk = "AKIDPROFILEDEV01", "profile-secret-" + "f" * 24
        config = self.write("config",
                            "[default]\nregion = us-east-1\n"
                            "[profile dev]\naws_access_key_id = AKIDFROMCONFIG01\n"
                            "aws_secret_access_key = %s\n"
                            "s3 =\n  max_concurrent_requests = 10\n" % sk)
        credentials = self.write("credentials",
                                 "# the operator's keys\n[dev]\naws_access_key_id = %s\n" % ak)
        with A.S3Fake({ak: (sk, None)}) as s3:
            server = self.server(s3, 'kind = "profile"\nname = "dev"\n',
                                 {"AWS_CONFIG_FILE": config,
                                  "AWS_SHARED_CREDENTIALS_FILE": credentials})
            self.assertEqual(self.upload(server), 200)
            self.assertEqual([key for _, key in s3.accepted], [ak])
            self.assert_no_secrets(server, ak, sk, "AKIDFROMCONFIG01", config, credentials)

    # verifies: ATCH-073 (profile: a profile that does not exist is FAILED_PRECONDITION, row 5)
    def test_missing_profile_is_an_invalid_configuration(self):
        config = self.write("config", "[profile other]\nregion = us-east-1\n")
        with A.S3Fake({}) as s3:
            server = self.server(s3, 'kind = "profile"\nname = "absent"\n',
                                 {"AWS_CONFIG_FILE": config})
            with server.channel() as ch:
                _, code, details = A.create_upload(ch, A.sha256(BODY), len(BODY))
            self.assertEqual((code, details), (grpc.StatusCode.FAILED_PRECONDITION,
                                               "storage credential source configuration is invalid"))

    def rotating_process(self, lifetime_seconds):
        """A credential process printing key id AKIDPROC<n> (n counts its runs) that expires
        `lifetime_seconds` after it runs."""
        counter = os.path.join(self.tmp.name, "runs")
        return self.write("creds.sh", (
            "#!/bin/sh\n"
            "n=$(cat %s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %s\n"
            "exp=$(date -u -d \"+%d seconds\" +%%Y-%%m-%%dT%%H:%%M:%%SZ)\n"
            "printf '{\"Version\": 1, \"AccessKeyId\": \"AKIDPROC%%s\", "
            "\"SecretAccessKey\": \"%s\", \"Expiration\": \"%%s\"}' $n $exp\n"
            "echo 'stderr chatter AKIDPROC' >&2\n")
            % (counter, counter, lifetime_seconds, PROCESS_SECRET), executable=True)

    # verifies: ATCH-073 (process), ATCH-028 (an expiring process credential is fetched again)
    def test_process_credential_is_refreshed_after_expiry(self):
        # 303 s of life: E = 303..302 at first; after ~4 s less than 300 s would remain, so the
        # next CreateUpload runs the process again and signs with its new key id.
        script = self.rotating_process(303)
        keys = lambda key_id: (PROCESS_SECRET, None) if key_id.startswith("AKIDPROC") else None
        with A.S3Fake(keys) as s3:
            server = self.server(s3, 'kind = "process"\ncommand = "%s --flag"\n' % script, {})
            self.assertEqual(self.upload(server), 200)
            self.assertEqual(self.upload(server, BODY + b"2"), 200)  # cached: same key
            time.sleep(4.5)
            self.assertEqual(self.upload(server, BODY + b"3"), 200)
            self.assertEqual([key for _, key in s3.accepted],
                             ["AKIDPROC1", "AKIDPROC1", "AKIDPROC2"])
            self.assert_no_secrets(server, "AKIDPROC", PROCESS_SECRET, script)

    # verifies: ATCH-073 (process: a failing process is UNAVAILABLE)
    def test_failing_process_is_unavailable(self):
        script = self.write("fail.sh", "#!/bin/sh\necho '{\"Version\": 1}'\nexit 2\n",
                            executable=True)
        with A.S3Fake({}) as s3:
            server = self.server(s3, 'kind = "process"\ncommand = "%s"\n' % script, {})
            with server.channel() as ch:
                _, code, details = A.create_upload(ch, A.sha256(BODY), len(BODY))
            self.assertEqual((code, details), A.UNAVAILABLE)
            self.assert_no_secrets(server, script)

    # verifies: OPS-007, OPS-008 — an upload waiting on a credential process that hangs is
    # answered UNAVAILABLE at shutdown, and the process exits within the drain bound + 5 s without
    # waiting for the credential process's own time limit.
    def test_shutdown_while_the_credential_process_hangs(self):
        script = self.write("hang.sh", "#!/bin/sh\nsleep 60\n", executable=True)
        with A.S3Fake({}) as s3:
            server = self.server(s3, 'kind = "process"\ncommand = "%s"\n' % script, {},
                                 server_extra="max_drain_duration_ms = 1000\n")
            outcome = {}

            def call():
                with server.channel() as ch:
                    outcome["r"] = A.create_upload(ch, A.sha256(BODY), len(BODY), timeout=60)

            caller = threading.Thread(target=call)
            caller.start()
            time.sleep(1.0)  # the call now waits for the credential process
            self.assertNotIn("r", outcome)
            server.terminate()
            caller.join(20)
            self.assertFalse(caller.is_alive())
            self.assertEqual(outcome["r"][1], grpc.StatusCode.UNAVAILABLE)
            self.assertEqual(server.wait(timeout=1 + 5), 0)

    # verifies: ATCH-073 (default_chain: the environment comes first)
    def test_default_chain_picks_the_environment_first(self):
        ak, sk = "AKIDCHAINENV0001", "chain-env-secret-" + "c" * 22
        config = self.write("config", "[default]\naws_access_key_id = AKIDCHAINPROFILE\n"
                                      "aws_secret_access_key = profile-secret\n")
        with A.S3Fake({ak: (sk, None)}) as s3:
            server = self.server(s3, 'kind = "default_chain"\n',
                                 {"AWS_ACCESS_KEY_ID": ak, "AWS_SECRET_ACCESS_KEY": sk,
                                  "AWS_CONFIG_FILE": config,
                                  "AWS_EC2_METADATA_DISABLED": "true"})
            self.assertEqual(self.upload(server), 200)
            self.assertEqual([key for _, key in s3.accepted], [ak])
            self.assert_no_secrets(server, ak, sk, "AKIDCHAINPROFILE")

    # verifies: ATCH-073 (default_chain: without environment keys, the shared profile is next)
    def test_default_chain_falls_back_to_the_profile(self):
        ak, sk = "AKIDCHAINPROFILE", "chain-profile-secret-" + "p" * 19
        config = self.write("config", "[default]\naws_access_key_id = %s\n"
                                      "aws_secret_access_key = %s\n" % (ak, sk))
        with A.S3Fake({ak: (sk, None)}) as s3:
            server = self.server(s3, 'kind = "default_chain"\n',
                                 {"AWS_CONFIG_FILE": config,
                                  "AWS_EC2_METADATA_DISABLED": "true"})
            self.assertEqual(self.upload(server), 200)
            self.assertEqual([key for _, key in s3.accepted], [ak])
            self.assert_no_secrets(server, ak, sk)


if __name__ == "__main__":
    unittest.main()
