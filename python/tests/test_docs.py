"""Every ```python block of docs/python.md runs (from the repository root);
blocks whose first line is `# needs a GPU` run only where there is one."""
import os
import re

import pytest

from conftest import ROOT, has_gpu

DOC = os.path.join(ROOT, "docs", "python.md")
BLOCKS = re.findall(r"```python\n(.*?)```", open(DOC).read(), re.S)


@pytest.mark.parametrize("k", range(len(BLOCKS)))
def test_doc_block(k, monkeypatch, capsys):
    code = BLOCKS[k]
    if code.startswith("# needs a GPU") and not has_gpu():
        pytest.skip("needs a GPU")
    monkeypatch.chdir(ROOT)
    exec(compile(code, f"docs/python.md block {k}", "exec"), {"__name__": f"doc_block_{k}"})


def test_blocks_found():
    assert len(BLOCKS) >= 7
