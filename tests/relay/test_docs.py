"""The Python examples in docs/relay.md and docs/envelope.md run and their assertions hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def examples(name: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(), flags=re.DOTALL)


@pytest.mark.parametrize("name", ["relay.md", "envelope.md"])
def test_doc_examples_run(name: str) -> None:
    blocks = examples(name)
    assert blocks, f"{name} has no Python example"
    for source in blocks:
        exec(compile(source, f"docs/{name}", "exec"), {})
