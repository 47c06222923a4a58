"""The alert rules of the operator kit (deploy/prometheus/alerts.yml, issue 34): promtool accepts
them, their unit tests pass (deploy/prometheus/alerts_test.yml), every alert has a unit test in
which it fires and one in which it stays quiet, and a runbook paragraph in docs/operations.md.
The families and labels the rules name are matched against a running server in
test_live_names.py."""
import re
import shutil
import subprocess
import unittest

import deploy_files as D


def promtool():
    path = shutil.which("promtool")
    if path is None:
        raise AssertionError("promtool (Debian package prometheus, scripts/setup) is required")
    return path


class AlertRulesTest(unittest.TestCase):
    def test_promtool_check_rules(self):
        done = subprocess.run([promtool(), "check", "rules", D.ALERTS], capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("SUCCESS: %d rules found" % len(D.alert_rules()), done.stdout)

    def test_promtool_test_rules(self):
        done = subprocess.run([promtool(), "test", "rules", D.ALERTS_TEST], capture_output=True,
                              text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("SUCCESS", done.stdout)

    def test_every_alert_has_a_firing_and_a_quiet_case(self):
        firing, quiet = set(), set()
        for group in D.load_alerts_test()["tests"]:
            for case in group.get("alert_rule_test", []):
                (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
                # A quiet case must feed the rule series, or it proves nothing.
                if not case.get("exp_alerts"):
                    self.assertTrue(group.get("input_series"), case["alertname"])
        names = [rule["alert"] for _, rule in D.alert_rules()]
        self.assertEqual(len(names), len(set(names)), "alert names repeat")
        self.assertEqual(sorted(set(names) - firing), [], "alerts without a firing test")
        self.assertEqual(sorted(set(names) - quiet), [], "alerts without a quiet test")
        self.assertEqual(sorted((firing | quiet) - set(names)), [], "tests of unknown alerts")

    def test_every_alert_has_severity_summary_and_runbook(self):
        with open(D.OPERATIONS) as f:
            operations = f.read()
        self.assertIn("\n## Alerts and runbooks\n", operations)
        section = operations.split("\n## Alerts and runbooks\n", 1)[1].split("\n## ", 1)[0]
        headings = re.findall(r"^### (\w+)$", section, re.MULTILINE)
        for group, rule in D.alert_rules():
            name = rule["alert"]
            self.assertIn(rule["labels"].get("severity"), ("warning", "critical"), name)
            self.assertTrue(rule["annotations"].get("summary"), name)
            self.assertEqual(rule["annotations"].get("runbook_url"),
                             "docs/operations.md#" + name.lower(), name)
            self.assertIn(name, headings, "no runbook paragraph for " + name)
            # The paragraph says what it means, what to check first and how to fix it.
            body = section.split("### " + name + "\n", 1)[1].split("\n### ", 1)[0]
            for part in ("**Means:**", "**Check:**", "**Fix:**"):
                self.assertIn(part, body, "%s: runbook lacks %s" % (name, part))
        self.assertEqual(sorted(set(headings) - {r["alert"] for _, r in D.alert_rules()}), [],
                         "runbook paragraphs of alerts that do not exist")


if __name__ == "__main__":
    unittest.main()
