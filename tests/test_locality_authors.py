"""batio's locality schedulers under the authors' model (``AUTHORS_MODEL``)
against the authors' own simulator on the same slice of the real trace
(``tests/data/locality_authors``, recorded from their code)."""

from pathlib import Path

import pytest

from batio.schedulers.locality import metrics as lm
from batio.engine.run import RunSpec, simulate
from batio.schedulers.locality import locality
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


@pytest.mark.parametrize("variant, policy", [("FCFS", "fcfs"), ("LEA", "lea")])
def test_the_authors_model_reproduces_their_simulator_on_a_slice(slice_workload, tmp_path, variant, policy):
    prefix = tmp_path / "out"
    simulate(RunSpec(str(REPO / "platforms" / "memcluster486.xml"), [str(slice_workload)], locality.__file__,
                     str(prefix), options={"policy": policy, **locality.AUTHORS_MODEL},
                     dynamic_jobs=True, compute_sharing=True, forward_profiles=True))
    table = lm.job_table(prefix, slice_workload, 1e8)
    comparison = lm.compare_with_authors(table, lm.read_authors_gantt(REFERENCE / f"slice_12_2_1_1_{variant}.csv"))
    # Measured 2026-11-24: FCFS 0.987 and 82 % of the jobs within 1 s, LEA
    # 0.998 and 82 %; the rest follows from same-instant events that Batsim
    # hands over in two rounds and the authors' loop in one
    # (scripts/results/locality.md).
    assert comparison["stretch_ratio"] == pytest.approx(1, abs=0.02)
    assert comparison["start_within_tolerance"] >= 0.75
    assert comparison["jobs_compared"] == {"FCFS": 1666, "LEA": 1641}[variant]
