"""Every notebook in notebooks/ is executed top to bottom; a failing cell fails the test."""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
# compiled populations on 4 fake devices: about 1.5 CPU-minutes even small, so with the
# slow checks (CI runs them after the default suite)
# and the notebooks that train (economy, selfplay: 40-50 s each; robots, meanfield: ~20 s),
# so that the default suite keeps its 10 minutes; quickstart and games stay in it
SLOW = {"populations", "selfplay", "economy", "robots", "meanfield"}


@pytest.mark.parametrize(
    "path", [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW else p for p in NOTEBOOKS], ids=[p.stem for p in NOTEBOOKS]
)
def test_notebook_runs(path, tmp_path, monkeypatch):
    nb = nbformat.read(path, as_version=4)
    # Notebooks read JAXAGENTS_SMALL to shrink their budgets under test.
    monkeypatch.setenv("JAXAGENTS_SMALL", "1")
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
