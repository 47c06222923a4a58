"""Every configuration the repository ships (docs/**/*.toml, deploy/**/*.toml) validates against
docs/schema/config.schema.json with python3-jsonschema, as an editor would check it, and names the
schema on its first line (`#:schema`, the taplo / Even Better TOML convention) with a path that
resolves to it. Needs no build: TOML is read with python3's tomllib."""
import tomllib
import unittest

import jsonschema

import schema_support as ss


def shipped_configs():
    found = []
    for top in ("docs", "deploy"):
        found += sorted((ss.ROOT / top).glob("**/*.toml"))
    return found


class SchemaFilesTest(unittest.TestCase):
    def test_schema_is_a_draft7_schema(self):
        jsonschema.Draft7Validator.check_schema(ss.load_schema())

    def test_shipped_configs_validate(self):
        validator = ss.validator(ss.load_schema())
        configs = shipped_configs()
        self.assertIn(ss.EXAMPLE_PATH, configs)
        for path in configs:
            with self.subTest(config=str(path.relative_to(ss.ROOT))):
                doc = tomllib.loads(path.read_text())
                errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message[:160]}"
                          for e in validator.iter_errors(doc)]
                self.assertEqual([], errors)

    def test_schema_directive(self):
        """docs/ configurations name the schema by a path relative to themselves (taplo resolves
        it against the document); any other shipped one, if it has the line, must resolve too."""
        for path in shipped_configs():
            first = path.read_text().split("\n", 1)[0]
            with self.subTest(config=str(path.relative_to(ss.ROOT))):
                if path.parent == ss.ROOT / "docs":
                    self.assertTrue(first.startswith("#:schema "), first)
                if first.startswith("#:schema ") and "://" not in first:
                    target = (path.parent / first.split(" ", 1)[1].strip()).resolve()
                    if target.is_relative_to(ss.ROOT):
                        self.assertEqual(ss.SCHEMA_PATH, target)

    def test_schema_refuses_what_the_loader_refuses(self):
        """A few refusals the schema must make on its own (the drift test covers every key)."""
        validator = ss.validator(ss.load_schema())
        base = ss.minimal_doc()
        for bad in ({"sever": {}}, {"server": {"identifier": "x", "log_level": "loud"}},
                    {"limits": {"max_request_bytes": 1.0}}, {"push": {"max_attempts": "env:N"}},
                    {"server": {"identifier": "x", "listen": "env:"}}):
            with self.subTest(doc=bad):
                self.assertFalse(validator.is_valid({**base, **bad}))
        self.assertTrue(validator.is_valid({**base, "server": {"identifier": "env:XMTP_ID",
                                                               "log_level": "env:LEVEL"}}))


if __name__ == "__main__":
    unittest.main()
