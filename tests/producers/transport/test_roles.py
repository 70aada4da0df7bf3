"""Roles as ACLs: the one definition renders the docs' table (docs/operations.md, "Securing Kafka") and the
``kafka-acls.sh`` commands `pubsub topics acls` prints; nobody but the author writes blocks, nobody but the job
writes outputs or the seam, a collator writes only its message topics, a consumer only reads (every role sees the
realm's topics' metadata)."""

from __future__ import annotations

import subprocess
import sys

from producers.transport.roles import ROLES, acl_commands, bindings, markdown_table, role
from tests.support.paths import REPO_ROOT


def test_the_docs_table_is_the_definition() -> None:
    text = (REPO_ROOT / "docs" / "operations.md").read_text()
    start = text.index("<!-- roles table:")
    table = text[text.index("\n", start) + 1:text.index("<!-- end of roles table -->")]
    assert table == markdown_table()


def _writers(realm: str, name: str) -> set[str]:
    return {r.name for r in ROLES for resource, topic, prefixed, _, op in bindings(realm, r, 2000)
            if resource == "topic" and op in ("Write", "All") and (topic == f"{realm}.{name}" or
                                                                    (prefixed and f"{realm}.{name}".startswith(topic)))}


def test_who_writes_each_topic() -> None:
    assert _writers("polkadot", "blocks") == {"author", "operator"}
    assert _writers("polkadot", "upward") == {"collator", "operator"}
    assert _writers("polkadot", "updates") == _writers("polkadot", "relay-views") == {"job", "operator"}
    assert not [b for b in bindings("polkadot", role("consumer")) if b[4] not in ("Read", "Describe", "DescribeConfigs")]
    reads = {topic for resource, topic, _, _, op in bindings("polkadot", role("consumer"))
             if resource == "topic" and op == "Read"}
    assert reads == {"polkadot.updates", "polkadot.health"}
    assert bindings("polkadot", role("collator"), 2000)[0][3] == "User:collator-2000"


def test_pubsub_topics_acls_prints_the_commands() -> None:
    done = subprocess.run([sys.executable, "-W", "ignore", "-m", "cli.main", "topics", "acls", "--realm", "kusama",
                           "--para", "2000", "--para", "2001", "--bootstrap", "k1:9094"],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == acl_commands("kusama", (2000, 2001), "k1:9094")
    assert ("kafka-acls.sh --bootstrap-server k1:9094 --command-config admin.properties --add --allow-principal "
            "User:author --operation Read --operation Write --operation Describe --topic 'kusama.blocks'"
            in done.stdout.splitlines())
    assert sum("User:collator-200" in line for line in done.stdout.splitlines()) == 6  # 2 paras x 3 grants
