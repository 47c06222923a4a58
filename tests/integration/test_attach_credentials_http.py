"""The HTTP credential sources end to end through the test binary (ATTACH.md section 7,
ATCH-073): web_identity, assume_role, container, instance and sso, each against its loopback fake
(credential_fakes.py) reached through the test build's pins (XB_TEST_PROVIDER_PINS; TLS hosts
trusted through SSL_CERT_FILE with push_fakes' TestCa). The IMDS and container addresses are only
ever pinned: nothing here contacts 169.254.x.x.

Each case: the credentials the source hands out sign an upload that S3Fake (botocore) accepts;
they expire -> the backend asks again -> the next URL carries the new key id; the endpoint fails
-> CreateUpload answers UNAVAILABLE "storage credentials unavailable"; the fake found nothing
wrong in any request; no credential, token or role ARN appears in the server's output at DEBUG.

Credentials live LIFETIME seconds, so a first URL is signed for LIFETIME-1..LIFETIME s (>= 300)
and after REFRESH_WAIT seconds fewer than 300 are left: the next CreateUpload refreshes (6.4).
"""
import hashlib
import os
import shutil
import tempfile
import time
import unittest

import attach_support as A
from credential_fakes import (ContainerFake, ImdsFake, SsoPortalFake, StsFake)
from push_fakes import TestCa

LIFETIME = 303
REFRESH_WAIT = 4.5
ROLE_ARN = "arn:aws:iam::123456789012:role/attach"


def key_id(response):
    return A.presigned_query(response.url)["X-Amz-Credential"].split("/")[0]


class HttpSourceMixin:
    """Subclasses set up `cls.fake` (a CredentialFake), `cls.credentials_toml`, `cls.pins`,
    `cls.extra_env` and `cls.secrets` (values that must never be printed) in `make_fake`."""

    @classmethod
    def setUpClass(cls):
        cls.ca = TestCa()
        cls.home = tempfile.mkdtemp(prefix="xb-attach-home-")
        cls.make_fake()
        cls.s3 = A.S3Fake(lambda access_key_id: cls.fake.keys(access_key_id))
        env = cls.ca.env(pins=cls.pins, extra=dict({"HOME": cls.home}, **cls.extra_env))
        for name in list(env):
            if name.startswith("AWS_") and name not in cls.extra_env:
                del env[name]  # only what the case sets
        cls.server = A.new_server(A.attachments_toml(cls.s3.endpoint, cls.credentials_toml),
                                  env=env)
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.check_sanitizers()
        cls.s3.close()
        cls.fake.close()
        cls.ca.cleanup()
        shutil.rmtree(cls.home, ignore_errors=True)

    def upload(self, body):
        with self.server.channel() as ch:
            return A.create_upload(ch, A.sha256(body), len(body))

    # verifies: ATCH-073, ATCH-028
    def test_signs_then_refreshes_on_expiry_then_fails_unavailable(self):
        body = os.urandom(64)
        first, code, details = self.upload(body)
        self.assertIsNotNone(first, (code, details))
        self.assertEqual(key_id(first), self.fake.issued_ids()[0])
        self.assertGreaterEqual(first.expires_in_seconds, 300)
        self.assertLessEqual(first.expires_in_seconds, LIFETIME)
        self.assertEqual(A.put(first, body), 200)

        time.sleep(REFRESH_WAIT)
        body2 = os.urandom(64)
        second, code, details = self.upload(body2)
        self.assertIsNotNone(second, (code, details))
        self.assertEqual(len(self.fake.issued_ids()), 2)
        self.assertEqual(key_id(second), self.fake.issued_ids()[1])
        self.assertNotEqual(key_id(second), key_id(first))
        self.assertEqual(A.put(second, body2), 200)

        self.fake.failing = True
        try:
            time.sleep(REFRESH_WAIT)
            failed, code, details = self.upload(os.urandom(64))
            self.assertIsNone(failed)
            self.assertEqual((code, details), A.UNAVAILABLE)
        finally:
            self.fake.failing = False
        self.assertEqual(self.fake.problems(), [])

        # OPS-014: nothing the source read or was given reaches the server's output at DEBUG.
        text = "".join(self.server.lines) + self.server.stderr_text
        issued = [v for k in self.fake.issued_ids() for v in self.fake.keys(k)]
        for secret in self.secrets + issued:
            self.assertNotIn(secret, text)


class WebIdentityTest(HttpSourceMixin, unittest.TestCase):
    @classmethod
    def make_fake(cls):
        token = "web-identity-jwt-" + "w" * 24
        token_file = os.path.join(cls.home, "web-token")
        with open(token_file, "w") as f:
            f.write(token)
        cls.fake = StsFake(cls.ca, role_arn=ROLE_ARN, web_token=token,
                           lifetime_seconds=LIFETIME)
        cls.credentials_toml = 'kind = "web_identity"\n'
        cls.pins = [cls.fake.pins()]
        cls.extra_env = {"AWS_WEB_IDENTITY_TOKEN_FILE": token_file, "AWS_ROLE_ARN": ROLE_ARN,
                         "AWS_ROLE_SESSION_NAME": "attach-e2e"}
        cls.secrets = [token, ROLE_ARN]


class AssumeRoleTest(HttpSourceMixin, unittest.TestCase):
    @classmethod
    def make_fake(cls):
        source = ("AKIDSOURCEE2E", "source-secret-" + "s" * 20, "source-token-" + "t" * 20)
        cls.fake = StsFake(cls.ca, role_arn=ROLE_ARN, source=source, external_id="ext-e2e",
                           lifetime_seconds=LIFETIME)
        cls.credentials_toml = ('kind = "assume_role"\nrole_arn = "%s"\nexternal_id = "ext-e2e"\n'
                                'session_name = "attach-e2e"\n' % ROLE_ARN)
        cls.pins = [cls.fake.pins()]
        cls.extra_env = {"AWS_ACCESS_KEY_ID": source[0], "AWS_SECRET_ACCESS_KEY": source[1],
                         "AWS_SESSION_TOKEN": source[2]}
        cls.secrets = [source[1], source[2], ROLE_ARN, "ext-e2e"]


class ContainerRelativeUriTest(HttpSourceMixin, unittest.TestCase):
    """The relative URI, asked on 169.254.170.2 (pinned), with AWS_CONTAINER_AUTHORIZATION_TOKEN."""

    @classmethod
    def make_fake(cls):
        token = "container-token-" + "c" * 24
        cls.fake = ContainerFake(path="/v2/credentials/task-e2e", authorization=token,
                                 lifetime_seconds=LIFETIME)
        cls.credentials_toml = 'kind = "container"\n'
        cls.pins = [cls.fake.pins()]
        cls.extra_env = {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/task-e2e",
                         "AWS_CONTAINER_AUTHORIZATION_TOKEN": token}
        cls.secrets = [token, "task-e2e"]


class ContainerFullUriTokenFileTest(HttpSourceMixin, unittest.TestCase):
    """The full URI on 127.0.0.1, with the token file (which wins over the token variable)."""

    @classmethod
    def make_fake(cls):
        token = "container-file-token-" + "f" * 24
        token_file = os.path.join(cls.home, "container-token")
        with open(token_file, "w") as f:
            f.write(token)
        cls.fake = ContainerFake(path="/creds", authorization=token, lifetime_seconds=LIFETIME)
        cls.credentials_toml = 'kind = "container"\n'
        cls.pins = []
        cls.extra_env = {"AWS_CONTAINER_CREDENTIALS_FULL_URI": cls.fake.full_uri(),
                         "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": token_file,
                         "AWS_CONTAINER_AUTHORIZATION_TOKEN": "not-this-one"}
        cls.secrets = [token, "not-this-one"]


class InstanceTest(HttpSourceMixin, unittest.TestCase):
    """IMDSv2 behind 169.254.169.254 (pinned; the real address is never contacted)."""

    @classmethod
    def make_fake(cls):
        cls.fake = ImdsFake(role="attach-e2e-role", lifetime_seconds=LIFETIME)
        cls.credentials_toml = 'kind = "instance"\n'
        cls.pins = [cls.fake.pins()]
        cls.extra_env = {}
        cls.secrets = ["imds-token-"]


class SsoTest(HttpSourceMixin, unittest.TestCase):
    """The cached token under a temporary HOME, then the SSO portal (pinned, TLS)."""

    START_URL = "https://d-e2e0000000.awsapps.com/start"

    @classmethod
    def make_fake(cls):
        access_token = "sso-access-token-" + "a" * 24
        cache = os.path.join(cls.home, ".aws", "sso", "cache")
        os.makedirs(cache)
        name = hashlib.sha1(cls.START_URL.encode()).hexdigest() + ".json"
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        with open(os.path.join(cache, name), "w") as f:
            f.write('{"startUrl": "%s", "region": "us-east-1", "accessToken": "%s", '
                    '"expiresAt": "%s"}' % (cls.START_URL, access_token, expires))
        cls.fake = SsoPortalFake(cls.ca, access_token, account_id="123456789012",
                                 role_name="AttachRole", lifetime_seconds=LIFETIME)
        cls.credentials_toml = ('kind = "sso"\naccount_id = "123456789012"\n'
                                'region = "us-east-1"\nrole_name = "AttachRole"\n'
                                'start_url = "%s"\n' % cls.START_URL)
        cls.pins = [cls.fake.pins()]
        cls.extra_env = {}
        cls.secrets = [access_token]


if __name__ == "__main__":
    unittest.main()
