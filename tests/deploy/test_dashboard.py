"""The Grafana dashboard of the operator kit (deploy/grafana/xmtp-backend.json, issue 34): its
shape is importable (uid, title, schema version, the datasource, deployment and instance
variables, every panel and target on the datasource variable), and every expression, with the
variables replaced by values they could take, compiles: each is written into a throwaway
recording-rules file that `promtool check rules` must accept. The families and labels the
expressions name are matched against a running server in test_live_names.py."""
import os
import shutil
import subprocess
import tempfile
import unittest

import yaml

import deploy_files as D
import promql

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


class DashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dashboard = D.load_dashboard()

    def test_importable_shape(self):
        d = self.dashboard
        self.assertEqual(d["uid"], "xmtp-backend")
        self.assertTrue(d["title"])
        self.assertIsInstance(d["schemaVersion"], int)
        self.assertGreaterEqual(d["schemaVersion"], 36)  # Grafana 9 and later
        self.assertNotIn("id", d)  # an import assigns the id; a fixed one would collide
        variables = {v["name"]: v for v in d["templating"]["list"]}
        self.assertEqual(variables["datasource"]["type"], "datasource")
        self.assertEqual(variables["datasource"]["query"], "prometheus")
        for name in ("identifier", "instance"):
            self.assertEqual(variables[name]["type"], "query", name)
            self.assertTrue(variables[name]["includeAll"], name)
            self.assertEqual(variables[name]["allValue"], ".*", name)
        for v in variables.values():
            if v["type"] == "query":
                self.assertEqual(v["datasource"], DATASOURCE, v["name"])
        ids = [p["id"] for p in d["panels"]] + [p["id"] for p in D.panels(d)
                                                  if p not in d["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids repeat")

    def test_every_panel_queries_the_datasource_variable(self):
        panels = D.panels(self.dashboard)
        self.assertGreater(len(panels), 40)
        for panel in panels:
            where = "panel %d %r" % (panel["id"], panel["title"])
            self.assertEqual(panel["datasource"], DATASOURCE, where)
            self.assertTrue(panel["targets"], where)
            for key in ("x", "y", "w", "h"):
                self.assertIn(key, panel["gridPos"], where)
            for target in panel["targets"]:
                self.assertEqual(target["datasource"], DATASOURCE, where)
                self.assertTrue(target["refId"] and target["expr"], where)

    def test_rows_cover_the_issue(self):
        rows = [p["title"] for p in self.dashboard["panels"] if p["type"] == "row"]
        for row in ("Golden signals per route", "Publish", "Streams",
                    "Tailer and allocation boundary", "Store", "Database pool", "Authentication",
                    "Telemetry", "Connections and limits", "Quotas", "Push", "Attachments"):
            self.assertIn(row, rows)

    def test_variables_are_defined(self):
        defined = {v["name"] for v in self.dashboard["templating"]["list"]}
        self.assertEqual(defined - {"datasource"}, set(D.VARIABLE_VALUES))
        for where, expr in D.dashboard_expressions(self.dashboard):
            try:
                D.substitute(expr)
            except KeyError as e:
                self.fail("%s uses an undefined variable %s" % (where, e))

    def test_every_expression_compiles(self):
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool (Debian package prometheus) is required")
        rules = []
        for i, (where, expr) in enumerate(D.dashboard_expressions(self.dashboard)):
            substituted = D.substitute(expr)
            promql.read(substituted)  # refuses constructs the name check cannot read
            rules.append({"record": "dashboard:expression_%d" % i, "expr": substituted,
                          "labels": {"where": where}})
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "dashboard_rules.yml")
            with open(path, "w") as f:
                yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
            done = subprocess.run([promtool, "check", "rules", path], capture_output=True,
                                  text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("SUCCESS: %d rules found" % len(rules), done.stdout)


if __name__ == "__main__":
    unittest.main()
