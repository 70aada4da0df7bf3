"""Who may do what on a realm's topics, as Kafka ACLs: one definition that the secured embedded broker applies,
that `pubsub topics acls --realm R` prints as ``kafka-acls`` commands for an external cluster, and that renders
the table of docs/operations.md ("Securing Kafka").

The signed envelope stays the authority on an origin's rights (docs/threat-model.md): Kafka cannot tell one para's
record from another's on ``<realm>.upward``, so every collator may write the same topics and the envelope decides
which para each record speaks for. The ACLs keep the deployment available: nobody but the author writes
``<realm>.blocks``, nobody but the job writes the outputs or the seam, a consumer only reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from producers.writers.author_state import AUTHOR_STATE
from pubsub_core.stages.topics import INPUTS, OUTPUTS, VIEWS

__all__ = ["CONSUMER_GROUPS", "Grant", "ROLES", "Role", "acl_commands", "bindings", "markdown_table", "role"]

CONSUMER_GROUPS = "pubsub-"
"""The prefix of every consumer group the project's readers use (``pubsub-reader-*``, ``pubsub-author-*``, ...)."""
SPARK_GROUPS = "spark-kafka-source-"
"""The prefix of the consumer groups Spark's Kafka source makes."""


@dataclass(frozen=True)
class Grant:
    """Operations allowed on a resource: ``topic``, ``group``, ``transactional-id`` or ``cluster``; ``name`` may
    hold ``{realm}``; ``prefixed``: every resource whose name starts with ``name``."""

    resource: str
    name: str
    operations: tuple[str, ...]
    prefixed: bool = False

    def named(self, realm: str) -> str:
        return self.name.format(realm=realm)


@dataclass(frozen=True)
class Role:
    """A kind of client: its principal (``{para}`` for a collator's para) and what it may do."""

    name: str
    principal: str
    summary: str
    grants: tuple[Grant, ...]

    def user(self, para: int | None = None) -> str:
        """The SCRAM user name of this role (a collator's with its para)."""
        return self.principal.format(para="" if para is None else para).rstrip("-")


def _topics(names: tuple[str, ...], operations: tuple[str, ...]) -> tuple[Grant, ...]:
    return tuple(Grant("topic", "{realm}." + name, operations) for name in names)


_WRITE = ("Write", "Describe")
_READ = ("Read", "Describe")
_GROUP = Grant("group", CONSUMER_GROUPS, ("Read",), prefixed=True)
_SEE = Grant("topic", "{realm}.", ("Describe", "DescribeConfigs"), prefixed=True)
"""Every role sees the realm's topics and their limits (metadata, not records): a client checks the topics it
uses exist before it writes, and the broker then refuses what its role may not do, by name."""

ROLES: tuple[Role, ...] = (
    Role("collator", "collator-{para}", "a para's collator: sends its signed upward and horizontal messages",
         (_SEE, *_topics(("upward", "horizontal"), _WRITE))),
    Role("governance", "governance", "root and the realm's governance: the genesis and signed extrinsics",
         (_SEE, *_topics(("genesis", "extrinsics"), _WRITE))),
    Role("author", "author", "the block author: reads the inputs, writes blocks and void orders in transactions, "
                             "each with its snapshot",
         (_SEE, *_topics(tuple(i for i in INPUTS if i != "blocks"), _READ),
          *_topics(("blocks", AUTHOR_STATE), ("Read", *_WRITE)),
          Grant("transactional-id", "pubsub-author-{realm}", _WRITE), _GROUP)),
    Role("job", "job", "the Spark job: reads the inputs and the seam, writes the outputs and the seam",
         (_SEE, *_topics(INPUTS, _READ), *_topics((*OUTPUTS, VIEWS), ("Read", "Write", "Describe", "Create",
                                                                 "DescribeConfigs")),
          _GROUP, Grant("group", SPARK_GROUPS, ("Read",), prefixed=True))),
    Role("consumer", "consumer", "an application following the realm's updates (and its health)",
         (_SEE, *_topics(("updates", "health"), _READ), _GROUP)),
    Role("operator", "operator", "the operator: creates, configures and deletes the realm's topics, reads all",
         (Grant("topic", "{realm}.", ("All",), prefixed=True), _GROUP, Grant("cluster", "kafka-cluster",
                                                                              ("Describe",)))),
)
"""Every role, in the docs' order."""


def role(name: str) -> Role:
    """The role called ``name``; ``KeyError`` for another."""
    for candidate in ROLES:
        if candidate.name == name:
            return candidate
    raise KeyError(name)


def bindings(realm: str, role_: Role, para: int | None = None) -> list[tuple[str, str, bool, str, str]]:
    """(resource, name, prefixed, principal, operation) of every ACL ``role_`` needs on ``realm``."""
    principal = f"User:{role_.user(para)}"
    return [(g.resource, g.named(realm), g.prefixed, principal, operation)
            for g in role_.grants for operation in g.operations]


_FLAGS = {"topic": "--topic", "group": "--group", "transactional-id": "--transactional-id", "cluster": "--cluster"}


def acl_commands(realm: str, paras: tuple[int, ...] = (), bootstrap: str = "BOOTSTRAP",
                 config: str = "admin.properties") -> list[str]:
    """``kafka-acls.sh`` commands that grant every role its rights on ``realm`` (collators: one per para of
    ``paras``, or ``collator-PARA`` to fill in)."""
    lines = []
    for each in ROLES:
        whom: tuple[int | None, ...] = (paras or (None,)) if "{para}" in each.principal else (None,)
        for para in whom:
            user = each.user(para) if para is not None or "{para}" not in each.principal else "collator-PARA"
            for grant in each.grants:
                target = _FLAGS[grant.resource] + ("" if grant.resource == "cluster" else f" '{grant.named(realm)}'")
                pattern = " --resource-pattern-type prefixed" if grant.prefixed else ""
                operations = " ".join(f"--operation {op}" for op in grant.operations)
                lines.append(f"kafka-acls.sh --bootstrap-server {bootstrap} --command-config {config} --add "
                             f"--allow-principal User:{user} {operations} {target}{pattern}")
    return lines


def markdown_table() -> str:
    """The roles as docs/operations.md shows them (for realm ``R``)."""
    rows = ["| role | principal | may | on |", "|---|---|---|---|"]
    for each in ROLES:
        for grant in each.grants:
            name = grant.named("R") + ("*" if grant.prefixed else "")
            rows.append(f"| {each.name} | `User:{each.principal.replace('{para}', 'N')}` | "
                        f"{', '.join(grant.operations)} | {grant.resource} `{name}` |")
    return "\n".join(rows) + "\n"
