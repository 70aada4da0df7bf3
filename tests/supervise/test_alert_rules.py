"""The shipped Prometheus alert rules (supervise/alerts/pubsub.rules.yml): Prometheus' own ``promtool`` checks them
and runs their unit tests (tests/supervise/alert_rules_test.yml: a series that fires each rule, one that must
not); every rule carries ``for``, a severity, a summary and a runbook link to a section of docs/operations.md that
exists; the docs' "Alerts" table names exactly the shipped rules."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from supervise.alerts import RULES_FILE, rules_text
from tests.support.paths import REPO_ROOT

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
CASES = Path(__file__).with_name("alert_rules_test.yml")
OPERATIONS = REPO_ROOT / "docs" / "operations.md"


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    if not Path(PROMTOOL).exists():
        pytest.fail("promtool is not installed: `make setup` installs it (Debian package prometheus)")
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120)


def _rules() -> list[dict[str, object]]:
    groups = yaml.safe_load(rules_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_promtool_checks_the_rules_and_passes_their_unit_tests(tmp_path: Path) -> None:
    (tmp_path / RULES_FILE).write_text(rules_text())
    shutil.copy(CASES, tmp_path / CASES.name)
    checked = _promtool("check", "rules", str(tmp_path / RULES_FILE))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in checked.stdout
    tested = _promtool("test", "rules", str(tmp_path / CASES.name))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_the_unit_tests_catch_a_rule_that_never_fires(tmp_path: Path) -> None:
    """The cases can fail: with the stall rule's expression made impossible, promtool reports the missing alert."""
    (tmp_path / RULES_FILE).write_text(rules_text().replace("max by (realm) (pubsub_realm_stalled) == 1",
                                                            "max by (realm) (pubsub_realm_stalled) == 2"))
    shutil.copy(CASES, tmp_path / CASES.name)
    tested = _promtool("test", "rules", str(tmp_path / CASES.name))
    assert tested.returncode != 0 and "PubsubRealmStalled" in tested.stdout + tested.stderr


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


def test_every_rule_has_for_severity_summary_and_a_runbook_section() -> None:
    anchors = {_anchor(line.lstrip("#")) for line in OPERATIONS.read_text().splitlines() if line.startswith("#")}
    rules = _rules()
    assert len(rules) == 7
    for rule in rules:
        assert rule.get("for"), rule["alert"]
        labels, notes = rule["labels"], rule["annotations"]
        assert isinstance(labels, dict) and labels["severity"] in ("warning", "critical"), rule["alert"]
        assert isinstance(notes, dict) and notes["summary"], rule["alert"]
        page, _, anchor = str(notes["runbook_url"]).partition("#")
        assert page == "docs/operations.md" and anchor in anchors, (rule["alert"], anchor)


def test_the_docs_alert_table_names_the_shipped_rules() -> None:
    text = OPERATIONS.read_text()
    section = text[text.index("\n## Alerts\n"):]
    section = section[:section.index("\n## ", 1)]
    table = {m.group(1): (m.group(2), m.group(3)) for m in re.finditer(r"^\| `(Pubsub\w+)` \| (\w+) \| `([^`]+)` \|",
                                                                          section, re.M)}
    assert table == {str(r["alert"]): (str(r["labels"]["severity"]), str(r["for"]))  # type: ignore[index]
                     for r in _rules()}
