"""Every ```python block of docs/python.md and README.md runs (from the repository root);
blocks whose first line is `# needs a GPU` run only where there is one. The shell commands of
README.md and docs/*.md: tests/cli/test_doc_commands.py (ctest doc_commands)."""
import os
import re

import pytest

from conftest import ROOT, has_gpu

DOC = os.path.join(ROOT, "docs", "python.md")
BLOCKS = re.findall(r"```python\n(.*?)```", open(DOC).read(), re.S)
# the README's Python section too
BLOCKS += re.findall(r"```python\n(.*?)```", open(os.path.join(ROOT, "README.md")).read(), re.S)


@pytest.mark.parametrize("k", range(len(BLOCKS)))
def test_doc_block(k, monkeypatch, capsys):
    code = BLOCKS[k]
    if code.startswith("# needs a GPU") and not has_gpu():
        pytest.skip("needs a GPU")
    if "import nibabel" in code:
        pytest.importorskip("nibabel")  # the nibabel example: where nibabel is installed
    monkeypatch.chdir(ROOT)
    exec(compile(code, f"docs/python.md block {k}", "exec"), {"__name__": f"doc_block_{k}"})


def test_blocks_found():
    assert len(BLOCKS) >= 9


def run_example(name, *args):
    import subprocess
    import sys
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", name), *args],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_example_simulate(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "sim.png"
    text = run_example("simulate.py", "--out", str(out), "--tstop", "30")
    assert out.stat().st_size > 10000 and "4 cells" in text and " spikes" in text


def test_example_life(tmp_path):
    text = run_example("life_fit.py", "--backend", "cpu", "--pruned", str(tmp_path / "p.trk"))
    assert "fibers kept: 58 of 60" in text and "median 18.40 -> 11.27" in text  # docs/life_data.md's numbers
    assert "(58 streamlines)" in text


def test_example_life_from_nibabel(tmp_path):
    nib = pytest.importorskip("nibabel")
    out = tmp_path / "p.trk"
    text = run_example("life_fit.py", "--backend", "cpu", "--nibabel", "--pruned", str(out))
    assert "the same model as from the files" in text and "fibers kept: 58 of 60" in text
    assert "median 18.40 -> 11.27" in text and "(58 streamlines)" in text
    assert len(nib.streamlines.load(str(out)).streamlines) == 58


def test_example_cupy():
    if not has_gpu():
        pytest.skip("needs a GPU")
    pytest.importorskip("cupy")
    assert "max relative difference" in run_example("cupy_batch.py", "--cells", "20000")
