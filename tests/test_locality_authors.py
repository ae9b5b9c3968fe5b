"""batio's locality schedulers under the authors' model (``AUTHORS_MODEL``)
against the authors' own simulator on the same slice of the real trace
(``tests/data/locality_authors``, recorded from their code)."""

from pathlib import Path

import pytest

from batio.engines.embedded.run import simulate
from batio.inputs.spec import RunSpec
from batio.schedulers.locality import locality
from batio.schedulers.locality import metrics as lm
from batio.workloads.memcluster486 import Slice, convert, dumps

REPO = Path(__file__).parent.parent
TRACE = REPO.parent / "shared" / "data" / "memcluster486" / "2022-09-10_V10000_anonymous.txt"
REFERENCE = REPO / "tests" / "data" / "locality_authors"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not TRACE.exists(), reason="needs ../shared/data/memcluster486")]


@pytest.fixture(scope="module")
def slice_workload(tmp_path_factory):
    path = tmp_path_factory.mktemp("slice") / "slice_restart.json"
    path.write_text(dumps(convert(TRACE, Slice.parse("12,2,1,1"), running_at_cut="restart")))
    return path


def run_slice(slice_workload, tmp_path, variant):
    policy, _, backfill = variant.lower().partition("_")
    prefix = tmp_path / "out"
    simulate(RunSpec(str(REPO / "platforms" / "memcluster486.xml"), [str(slice_workload)], locality.__file__,
                     str(prefix), options={"policy": policy, "backfill": bool(backfill), **locality.AUTHORS_MODEL},
                     dynamic_jobs=True, compute_sharing=True))
    table = lm.job_table(prefix, slice_workload, 1e8)
    return lm.compare_with_authors(table, lm.read_authors_gantt(REFERENCE / f"slice_12_2_1_1_{variant}.csv"))


@pytest.mark.parametrize("variant", ["FCFS", "FCFS_BF", "EFT", "EFT_BF", "LEA", "LEA_BF", "LEO", "LEO_BF",
                                     "LEM", "LEM_BF"])
def test_the_authors_model_gives_their_simulators_schedule(slice_workload, tmp_path, variant):
    """Every job starts at the authors' second on the authors' node."""
    comparison = run_slice(slice_workload, tmp_path, variant)
    assert comparison["jobs_compared"] == {"LEA": 1641, "LEM": 1641, "FCFS": 1666}.get(variant.split("_")[0], 1667)
    assert comparison["start_within_tolerance"] == 1.0
    assert comparison["worst_start_gap"] == 0.0
    assert comparison["same_node"] == 1.0
    assert comparison["stretch_ratio"] == pytest.approx(1, abs=1e-9)
