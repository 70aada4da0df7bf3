"""The examples in docs/trie.md run and their assertions hold."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "trie.md"


def test_python_examples_in_trie_doc_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert blocks, "docs/trie.md has no python example"
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})
