"""The operator kit's monitoring files, read for the checks of tests/deploy/: the alert rules
(deploy/prometheus/alerts.yml), their unit tests (alerts_test.yml) and the Grafana dashboard
(deploy/grafana/xmtp-backend.json), with every PromQL expression each holds."""
import json
import os
import re

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ALERTS = os.path.join(ROOT, "deploy", "prometheus", "alerts.yml")
ALERTS_TEST = os.path.join(ROOT, "deploy", "prometheus", "alerts_test.yml")
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "xmtp-backend.json")
OPERATIONS = os.path.join(ROOT, "docs", "operations.md")

# The rule group for signals no backend family shows (OPS, Known limitations), written against
# the exporters below; every other group names backend families only (and `up`).
INFRASTRUCTURE_GROUP = "xmtp-backend-infrastructure"

# Labels Prometheus attaches to every scraped series (job, instance) and the optional deployment
# label an operator attaches in the scrape configuration (docs/operations.md: the backend's
# exposition has no identifier label).
TARGET_LABELS = {"job", "instance", "identifier"}

# Families that are not the backend's, and the only ones the rules and the dashboard may name
# besides the live exposition's, with the labels each carries and where it comes from.
EXTERNAL = {
    # Prometheus itself: one per scrape target.
    "up": {"labels": set(), "source": "Prometheus (synthetic, per target)"},
    # prometheus-postgres-exporter 0.11.1 (Debian bookworm), default built-in queries: the
    # pg_stat_replication map (primary only; pg_wal_lsn_diff is the replay lag in bytes), the
    # pg_stat_activity map, and pg_settings.
    "pg_stat_replication_pg_wal_lsn_diff": {
        "labels": {"server", "application_name", "client_addr", "state", "sync_state",
                   "slot_name"},
        "source": "prometheus-postgres-exporter (Debian), pg_stat_replication"},
    "pg_stat_activity_count": {"labels": {"server", "datname", "state"},
                               "source": "prometheus-postgres-exporter (Debian), pg_stat_activity"},
    "pg_settings_max_connections": {"labels": {"server"},
                                    "source": "prometheus-postgres-exporter (Debian), pg_settings"},
    # prometheus-node-exporter (Debian), filesystem collector.
    "node_filesystem_avail_bytes": {"labels": {"device", "fstype", "mountpoint"},
                                    "source": "prometheus-node-exporter (Debian), filesystem"},
    "node_filesystem_size_bytes": {"labels": {"device", "fstype", "mountpoint"},
                                   "source": "prometheus-node-exporter (Debian), filesystem"},
}

# Grafana's built-in variables, replaced by values an expression could receive.
BUILTINS = {"__rate_interval": "1m", "__interval": "30s", "__range": "1h",
            "__range_s": "3600", "__interval_ms": "30000"}
# Plausible values of the dashboard's own variables (a multi-value "All" is the allValue .*).
VARIABLE_VALUES = {"identifier": ".*", "instance": "127.0.0.1:9464", "method": "Publish|Query"}

VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
LABEL_VALUES = re.compile(r"^label_values\((.*),\s*(\w+)\)$")


def load_alerts():
    with open(ALERTS) as f:
        return yaml.safe_load(f)


def load_alerts_test():
    with open(ALERTS_TEST) as f:
        return yaml.safe_load(f)


def load_dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def alert_rules():
    """[(group name, rule)] of every alerting rule."""
    return [(group["name"], rule) for group in load_alerts()["groups"]
            for rule in group["rules"] if "alert" in rule]


def substitute(expr, values=None):
    """The expression with every dashboard and built-in variable replaced; raises KeyError for a
    variable that is neither."""
    known = dict(BUILTINS, **(values if values is not None else VARIABLE_VALUES))

    def value(m):
        return known[m.group(1) or m.group(2)]

    return VARIABLE.sub(value, expr)


def panels(dashboard):
    """Every panel that is not a row, including panels nested in collapsed rows."""
    out = []
    for panel in dashboard["panels"]:
        if panel.get("type") == "row":
            out.extend(panel.get("panels", []))
        else:
            out.append(panel)
    return out


def dashboard_expressions(dashboard):
    """[(where, raw expression)] of every panel target and every query variable's selector."""
    out = []
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            out.append(("panel %d %r target %s" % (panel["id"], panel["title"], target["refId"]),
                        target["expr"]))
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        m = LABEL_VALUES.match(variable["query"]["query"])
        if m is None:
            raise ValueError("variable %s: not label_values(selector, label)" % variable["name"])
        # The selector, and the label asked for as a grouping of that selector.
        out.append(("variable %s" % variable["name"],
                    "count by (%s) (%s)" % (m.group(2), m.group(1))))
    return out
