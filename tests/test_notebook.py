"""docs/report_notebook.ipynb runs as Jupyter runs it, from a fresh kernel, on a real run."""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("evalys")  # the `ecosystem` extra

NOTEBOOK = Path(__file__).resolve().parent.parent / "docs" / "report_notebook.ipynb"


def test_the_example_notebook_reproduces_fig8_from_a_run(tmp_path, monkeypatch):
    monkeypatch.setenv("BATIO_NOTEBOOK_RUN", str(tmp_path / "run"))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # A failing cell (its asserts compare with evalys and with the study's own code) raises here.
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    printed = "".join(output.get("text", "") for cell in notebook.cells for output in cell.get("outputs", []))
    assert "60 jobs on 96 hosts, I/O node 240 GB/s" in printed
    assert "the study's resource_usage gives the same curves" in printed
    assert (tmp_path / "run" / "fig8_usage_LS.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
