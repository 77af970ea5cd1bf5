"""Every notebook in notebooks/ is executed top to bottom; a failing cell fails the test.
And every notebook is stored executed (``python notebooks/execute.py``), so that a reader
sees its figures without running it."""

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_with_its_outputs(path):
    """Every code cell ran (in order, without an error) and at least one figure is stored."""
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    counts = [c.get("execution_count") for c in cells if "".join(c["source"]).strip()]
    assert counts and all(isinstance(n, int) for n in counts), f"{path.name}: not stored executed (run notebooks/execute.py)"
    assert counts == sorted(counts), f"{path.name}: cells were run out of order"
    outputs = [o for c in cells for o in c.get("outputs", [])]
    assert not [o for o in outputs if o["output_type"] == "error"], f"{path.name}: stored with an error"
    figures = [o for o in outputs if "image/png" in o.get("data", {}) or "image/gif" in o.get("data", {})]
    assert figures, f"{path.name}: no figure stored"
    assert path.stat().st_size < 3_000_000, f"{path.name}: {path.stat().st_size} bytes; keep stored figures small"


nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
# Executing a notebook compiles and trains: the short ones (quickstart, games,
# meanfield: 10-30 s each) run with the slow checks (CI runs them after the default
# suite), the ones that train longer (1-1.5 minutes each, populations on 4 fake devices)
# only with `pytest -m heavy`. The default suite checks that every notebook is stored
# executed, with its figures (what the pages show).
SLOW = {"meanfield", "quickstart", "games"}
HEAVY = {"populations", "selfplay", "economy", "robots", "lm_selfplay"}


def _marked(p):
    if p.stem in SLOW | HEAVY:
        return pytest.param(p, marks=pytest.mark.slow if p.stem in SLOW else pytest.mark.heavy)
    return p


@pytest.mark.parametrize("path", [_marked(p) for p in NOTEBOOKS], ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    nb = nbformat.read(path, as_version=4)
    # Notebooks read JAXAGENTS_SMALL to shrink their budgets under test.
    monkeypatch.setenv("JAXAGENTS_SMALL", "1")
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
