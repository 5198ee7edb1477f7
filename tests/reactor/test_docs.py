"""Every ```python block of docs/reactor.md runs as written (in order, one namespace)."""
from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "reactor.md"


def test_docs_examples_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 6
    ns: dict = {"__name__": "docs_reactor"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{DOC.name}[block {i}]", "exec"), ns)
    out = [ln for ln in capsys.readouterr().out.splitlines() if ln]
    assert out[:3] == ["10000000 0 1", "1010000000 0 2", "2010000000 0 3"]
