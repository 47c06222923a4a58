"""docs/schema/config.schema.json against the loader itself (src/config), so that neither can change
without the other: every document below is loaded by the real loader (config_schema_probe, one
process for all of them) and, where the schema can judge it, validated by python3-jsonschema; the
two verdicts must be the expected one.

- Every identifier the loader's sources name (string literals of src/config/*.cc, field names of
  config.h) is, in every closed table of the schema, either a key of that table or refused by the
  loader as an unknown key: a key added to the loader and not to the schema fails here.
- Every key of the schema loads with its default or example; with its default it loads the same
  Config (every field, walked with Boost.PFR) as without it; a key the loader does not know fails.
- Ranges: the loader accepts minimum and maximum and refuses one below and one above; enums: every
  value accepted, every other candidate refused; required keys: refused when missing; env:NAME
  accepted for string keys and refused for the others, by both.
- Every key docs/config.example.toml writes (set or commented out) is in the schema, and back.
"""
import copy
import re
import unittest

import schema_support as ss

INT64_MAX = 2**63 - 1
DELETE = ss.DELETE
PG_URL = "postgresql://xmtp@db.internal:5432/xmtp"

# Keys whose valid value needs another key changed (relationships the schema cannot express).
COMPANIONS = {
    "database.replica_url": {("database", "url"): PG_URL},
    "auth.keys": {("auth", "jwks_url"): DELETE},
}
# Bounds reachable only with another key moved out of the way (CONF section 3, OPS-021).
BOUND_COMPANIONS = {
    ("publishing.max_publish_duration_ms", "min"): {("database", "max_statement_timeout_ms"): 1},
    ("database.max_statement_timeout_ms", "max"):
        {("publishing", "max_publish_duration_ms"): 2147483647},
    ("streams.max_pong_wait_ms", "min"): {("streams", "keepalive_interval_ms"): 1},
    ("streams.keepalive_interval_ms", "max"): {("streams", "max_pong_wait_ms"): 4294967296},
    ("limits.max_query_limit", "min"): {("limits", "default_query_limit"): 1},
    ("limits.default_query_limit", "max"): {("limits", "max_query_limit"): 4294967295},
    ("limits.max_stream_topics", "min"): {("limits", "max_update_adds"): 1},
    ("limits.max_update_adds", "max"): {("limits", "max_stream_topics"): 4294967295},
    ("limits.max_response_memory_bytes", "min"):
        {("limits", "max_connection_response_bytes"): 1 << 20},
    ("limits.max_connection_response_bytes", "max"):
        {("limits", "max_response_memory_bytes"): 1 << 40},
    ("limits.max_request_bytes", "min"): {("limits", "max_envelope_bytes"): 1},
    ("limits.max_response_bytes", "min"): {("limits", "max_envelope_bytes"): 1},
    ("limits.max_header_list_bytes", "min"): {("auth", "api_keys"): DELETE},
    ("auth.jwks_max_stale_seconds", "min"): {("auth", "jwks_refresh_seconds"): 1},
}
for _who in ("principal", "address"):
    for _what in ("publish", "stream_opens"):
        BOUND_COMPANIONS[(f"quotas.{_who}.{_what}_burst", "max")] = {
            ("quotas", _who, _what + "_per_second"): 1}
# Tables that are not always present: their defaults are compared in the example's context only.
OPTIONAL_TABLES = ("auth", "push", "attachments", "server.tls")


class Cases:
    """Documents with their expected verdicts; run() loads them all in one probe process."""

    def __init__(self, schema, env):
        self.schema, self.env, self.rows = schema, dict(env), []
        self.validator = ss.validator(schema)

    def add(self, doc, ok, label, names=None, exact=None, check_schema=True):
        self.rows.append(dict(doc=doc, ok=ok, label=label, names=names, exact=exact,
                              check_schema=check_schema))
        return len(self.rows) - 1

    def run(self):
        self.results = ss.run_probe([r["doc"] for r in self.rows], self.env)
        failures = []
        for row, (ok, text) in zip(self.rows, self.results):
            failures += self.judge(row, ok, text)
        return failures

    def judge(self, row, ok, text):
        out = []
        if ok != row["ok"]:
            out.append(f"loader {'accepts' if ok else 'refuses'} {row['label']}: {text[:200]}")
        elif not ok and row["exact"] is not None and text != row["exact"]:
            out.append(f"loader on {row['label']}: {text!r}, not {row['exact']!r}")
        elif not ok and row["names"] is not None and row["names"] not in text:
            out.append(f"loader on {row['label']} does not name {row['names']}: {text}")
        if row["check_schema"]:
            valid = self.validator.is_valid(row["doc"])
            if valid != row["ok"]:
                out.append(f"schema {'accepts' if valid else 'refuses'} {row['label']}")
        return out


class SchemaDriftTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schema = ss.load_schema()
        cls.tables, cls.leaves = ss.walk(cls.schema)
        apns, fcm, cls.publics = ss.pem_keys()
        cls.env = ss.example_env(apns, fcm)
        cls.names = ss.loader_names() | {"application_components"}
        for table in cls.tables:
            cls.names |= set(table.props)

    def cases(self):
        return Cases(self.schema, self.env)

    def edited(self, base, edits):
        doc = copy.deepcopy(base)
        for path, value in edits.items():
            ss.edit(self.schema, doc, path, value)
        return doc

    def valid_context(self, path, extra=None):
        """The example document (every table, valid) with `path`'s table present and the
        companions its key needs."""
        doc = ss.example_doc()
        if path[0] != "push":
            del doc["push"]  # its RSA and EC keys cost the loader a millisecond per document
        ss.container(self.schema, doc, path[:-1])
        edits = {}
        for prefix, companion in COMPANIONS.items():
            if ss.path_str(path).startswith(prefix):
                edits.update(companion)
        edits.update(extra or {})
        return self.edited(doc, edits)

    def assert_no_failures(self, failures):
        self.assertEqual([], failures[:40], f"{len(failures)} disagreements")

    def unknown_context(self, table):
        doc = ss.minimal_doc()
        if table.path[:1] == ("auth",):
            doc["auth"] = {"enabled": False}
        here = doc
        for seg in table.path:
            if seg == "[]":
                here.append({})
                here = here[0]
            else:
                here = here.setdefault(seg, [] if self.is_array(table.path, seg) else {})
        return doc, here

    def is_array(self, path, seg):
        i = path.index(seg)
        return i + 1 < len(path) and path[i + 1] == "[]"

    # verifies: CONF section 1.2 (unknown keys), in the schema as in the loader
    def test_every_loader_key_is_in_the_schema(self):
        cases = self.cases()
        for table in self.tables:
            if table.variants:
                continue  # credentials: test_credential_kinds
            self.assertTrue(table.closed, f"{ss.path_str(table.path)}: additionalProperties")
            for name in sorted(self.names - set(table.props)):
                doc, here = self.unknown_context(table)
                here[name] = "x"
                key = ss.path_str(table.path + (name,))
                cases.add(doc, False, f"unknown {key}",
                          exact=f"configuration is invalid: {key} (unknown key)", check_schema=False)
        failures = cases.run()
        self.assert_no_failures([f + " (a loader key the schema lacks?)" for f in failures])

    def valid_value(self, node):
        node = ss.resolve(self.schema, node)
        self.assertTrue("default" in node or "examples" in node, node.get("description"))
        return copy.deepcopy(node["default"] if "default" in node else node["examples"][0])

    def test_every_schema_key_loads_and_defaults_match(self):
        cases, pairs = self.cases(), []
        for path, node in self.leaves:
            key = ss.path_str(path)
            value = self.valid_value(node)
            cases.add(self.edited(self.valid_context(path), {path: value}), True, f"{key} = {value!r}"[:120])
            if "default" not in node:
                continue
            contexts = [self.valid_context(path)]
            if not key.startswith(OPTIONAL_TABLES):
                contexts.append(ss.minimal_doc())
            for base in contexts:
                without = cases.add(self.edited(base, {path: DELETE}), True, f"{key} omitted")
                with_default = cases.add(self.edited(base, {path: value}), True, f"{key} default")
                pairs.append((key, without, with_default))
        failures = cases.run()
        for key, a, b in pairs:
            if cases.results[a][0] and cases.results[a] != cases.results[b]:
                failures.append(f"{key}: the schema's default is not the loader's")
        self.assert_no_failures(failures)

    def test_ranges(self):
        cases = self.cases()
        for path, node in self.leaves:
            key, node = ss.path_str(path), ss.resolve(self.schema, node)
            if node.get("type") not in ("integer", "number"):
                continue
            self.assertIn("minimum", node, key)
            bounds = [("min", node["minimum"], -1)]
            if "maximum" in node:
                bounds.append(("max", node["maximum"], 1))
            for which, bound, step in bounds:
                extra = BOUND_COMPANIONS.get((key, which), {})
                base = self.valid_context(path, extra)
                cases.add(self.edited(base, {path: bound}), True, f"{key} = {which} {bound}")
                beyond = bound + step
                if beyond <= INT64_MAX:
                    cases.add(self.edited(base, {path: beyond}), False, f"{key} = {beyond}",
                              names=key)
        self.assert_no_failures(cases.run())

    def test_enums(self):
        cases = self.cases()
        for path, node in self.leaves:
            enum = ss.own_branch(self.schema, node).get("enum")
            if enum is None or path[-1] == "kind":
                continue
            key = ss.path_str(path)
            for value in enum:
                extra = {}
                if key == "auth.keys[0].alg":
                    extra = {path[:-1] + ("public_key",): self.publics[value]}
                base = self.valid_context(path, extra)
                cases.add(self.edited(base, {path: value}), True, f"{key} = {value}")
            # An error about an inline key names the entry (auth.keys[0]), not its field.
            named = ss.path_str(path[:-1]) if "[]" in path else key
            for value in sorted(self.names - set(enum)):
                cases.add(self.edited(self.valid_context(path), {path: value}), False,
                          f"{key} = {value}", names=named, check_schema=False)
        self.assert_no_failures(cases.run())

    def test_required(self):
        cases = self.cases()
        for table in self.tables:
            for name in table.required:
                path = table.path + (name,)
                doc = self.edited(self.valid_context(path), {path: DELETE})
                cases.add(doc, False, f"{ss.path_str(path)} missing", names=ss.path_str(path))
        self.assert_no_failures(cases.run())

    # verifies: CONF section 1.3 (env:NAME resolves string values only)
    def test_env_form(self):
        cases = self.cases()
        for n, (path, node) in enumerate(self.leaves):
            kind = ss.leaf_type(self.schema, node)
            if kind in ("array", "object"):
                continue
            value = self.valid_value(node)
            if str(value).startswith("env:"):  # no recursion: put the value itself in the variable
                value = self.env[value[4:]]
            variable = f"XB_SCHEMA_PROBE_{n}"
            cases.env[variable] = str(value).lower() if kind == "boolean" else str(value)
            doc = self.edited(self.valid_context(path), {path: "env:" + variable})
            cases.add(doc, kind == "string", f"{ss.path_str(path)} = env:NAME",
                      names=None if kind == "string" else ss.path_str(path))
        self.assert_no_failures(cases.run())

    def test_credential_kinds(self):
        cases = self.cases()
        path = ("attachments", "target", "S3", "credentials")
        table = next(t for t in self.tables if t.path == path)
        key = ss.path_str(path)
        for kind, (required, optional) in table.variants.items():
            creds = {"kind": kind, **{f: "x" for f in required}}
            cases.add(self.edited(self.valid_context(path + ("kind",)), {path: creds}), True, kind)
            for field in optional:
                doc = self.edited(self.valid_context(path + ("kind",)), {path: {**creds, field: "x"}})
                cases.add(doc, True, f"{kind} with {field}")
            for field in required:
                doc = self.edited(self.valid_context(path + ("kind",)),
                                  {path: {k: v for k, v in creds.items() if k != field}})
                cases.add(doc, False, f"{kind} without {field}", names=f"{key}.{field}")
            for name in sorted(self.names - {"kind", *required, *optional}):
                doc = self.edited(self.valid_context(path + ("kind",)), {path: {**creds, name: "x"}})
                cases.add(doc, False, f"{kind} with {name}", names=f"{key}.{name}",
                          check_schema=False)
        for name in sorted(self.names - set(table.variants)):
            doc = self.edited(self.valid_context(path + ("kind",)), {path: {"kind": name}})
            cases.add(doc, False, f"kind {name}", names=f"{key}.kind", check_schema=False)
        self.assert_no_failures(cases.run())

    def test_example_keys_are_the_schema_keys(self):
        """Every key the example writes or shows commented out is in the schema, and back."""
        schema_keys = {ss.path_str(p).replace("[0]", "") for p, _ in self.leaves}
        # The keys of each credentials kind: the example writes static's, and lists the others in
        # a comment table.
        variant_keys = set()
        for table in self.tables:
            for fields in table.variants.values():
                variant_keys |= {ss.path_str(table.path + (f,)) for f in fields[0] + fields[1]}
        maps = {ss.path_str(p) for p, n in self.leaves if ss.leaf_type(self.schema, n) == "object"}
        example_keys = set()
        table = ""
        for line in ss.EXAMPLE_PATH.read_text().splitlines():
            header = re.fullmatch(r"#? ?\[\[?([A-Za-z0-9_.]+)\]\]?\s*", line)
            if header:
                table = header.group(1)
                example_keys.add(table)
                continue
            entry = re.match(r"#? ?([A-Za-z0-9_]+) = (.*)", line)
            if entry is None or table in maps:
                continue
            try:
                ss.tomllib.loads(f"k = {entry.group(2)}")
            except ss.tomllib.TOMLDecodeError:
                if not entry.group(2).startswith('"""'):
                    continue  # prose in a comment, not a key
            example_keys.add(f"{table}.{entry.group(1)}")
        tables = {ss.path_str(t.path).replace("[0]", "") for t in self.tables}
        self.assertEqual(set(), example_keys - schema_keys - variant_keys - tables - maps,
                         "in the example, not in the schema")
        self.assertEqual(set(), schema_keys - example_keys - maps, "in the schema, not the example")


if __name__ == "__main__":
    unittest.main()
