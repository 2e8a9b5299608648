"""docs/examples/showback.ipynb runs from top to bottom in a real kernel
(nbclient): no errors, the table, the charts and the report display."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "examples" / "showback.ipynb"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_showback_notebook_runs(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"), \
        "commit the notebook without outputs"
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, errors[0]["evalue"] if errors else ""
    sources = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    by_source = {src: cell.outputs for src, cell in zip(sources, [c for c in nb.cells if c.cell_type == "code"])}
    images = [src for src, outs in by_source.items()
              if any("image/png" in o.get("data", {}) for o in outs)]
    assert sum("gpucost.plot." in src for src in images) == 4  # every chart cell shows its figure
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("$" in h and "<table" in h for h in html)  # the styled showback table
    assert any(h.startswith("<iframe srcdoc=") for h in html)  # the report, displayed inline
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "usage samples" in text and "Spend on unlabelled workloads: $" in text
