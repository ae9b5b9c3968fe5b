"""Runs of alike jobs (same cores, walltime and file) planned in compiled
code (paper 004, Algorithms 1-5, lines 2-9): ``plan_run`` plans them as
``Placement`` would one by one, to the last bit (``README.md`` beside this
file says when it stops and what it returns)."""
from __future__ import annotations

import math

from numba import njit
import numpy as np

from batio.schedulers.locality.coreplan import profile_breakpoint
from batio.schedulers.locality.fileplan import first_other_start, insert_start

FCFS, EFT, LEA, LEO = 0, 1, 2, 3
POLICY_CODES = {"fcfs": FCFS, "eft": EFT, "lea": LEA, "leo": LEO}
# Why plan_run stopped short of its count with a job it could plan: a row of
# this array is full (the caller widens it, ``grow``, and calls again).
NEEDS_NOTHING, NEEDS_CORE_COLUMNS, NEEDS_SLOT_COLUMNS, NEEDS_START_COLUMNS = 0, 1, 2, 3


@njit(cache=True)
def _present(load_start, last_use, evict_at, x, retain_cached):
    """``FilePlan._present`` on one copy."""
    in_use = load_start <= x and x <= last_use
    if not retain_cached:
        return in_use
    return in_use or (load_start <= x and x < evict_at)


@njit(cache=True)
def _unused(last_use, evict_at, x, now, retain_cached):
    """``FilePlan._unused`` on one copy."""
    if retain_cached:
        return last_use <= x and x < evict_at
    return now <= last_use and last_use <= x


@njit(cache=True, inline="always")
def _profile_window(times, free, used, node, cores, walltime):
    """``CoreProfile.earliest_on``: the first window of Cores(J) cores for
    WallTime(J). Read forward: a window starts where a stretch of columns with
    Cores(J) free starts, and fits once the stretch reaches WallTime(J) later
    (a column at or after that time, or its end)."""
    tk = math.inf
    stretch = -1
    for column in range(used):
        t = times[node, column]
        if free[node, column] < cores:
            if stretch >= 0 and t >= tk + walltime:
                break
            stretch = -1
            tk = math.inf
        elif stretch < 0:
            if t == math.inf:
                break
            stretch = column
            tk = t
        elif t >= tk + walltime:
            break
    return tk


@njit(cache=True, inline="always")
def _evictable(slots, node, fid, tk, now, retain_cached):
    """``FilePlan.eviction_penalty_on``'s bytes: the copies of the node's row
    in memory but not in use at ``tk``, the job's own file left out."""
    slot_file, slot_size, _, _, slot_last_use, slot_evict_at, top, _ = slots
    evictable = 0.0
    for column in range(top[node]):
        other = slot_file[node, column]
        if other >= 0 and other != fid and _unused(slot_last_use[node, column], slot_evict_at[node, column], tk, now,
                                                    retain_cached):
            evictable += slot_size[node, column]
    return evictable


@njit(cache=True, inline="always")
def _score_nodes(first, last, job, now, rule, profile, avail, times, free, used, file_model, slots, col_of, scored):
    """``NodeScores``' lines 3-8 on nodes ``first`` to ``last`` - 1: their
    t_k, t'_k, score without EvictionPenalty, EvictionPenalty and score."""
    cores, walltime, job_bytes, load_seconds, fid = job
    policy_code, W, eviction_weight, penalised = rule
    has_files, retain_cached, memory_bytes, bandwidth = file_model
    _, _, slot_load_start, slot_ready, slot_last_use, slot_evict_at, _, _ = slots
    t_k, t_prime, base, penalty, known, scores = scored
    for node in range(first, last):
        if profile:
            tk = _profile_window(times, free, used, node, cores, walltime)
        else:
            tk = max(avail[node, cores - 1], now)
        tp = tk
        if has_files:
            tp = tk + load_seconds
            column = col_of[node]
            if column >= 0 and _present(slot_load_start[node, column], slot_last_use[node, column],
                                        slot_evict_at[node, column], tk, retain_cached):
                tp = max(tk, slot_ready[node, column])
        t_k[node] = tk
        t_prime[node] = tp
        eft_scored = policy_code == LEO and tk == now   # LEO scores t'_k where the job starts now
        if policy_code == FCFS:
            score = tk
        elif policy_code == EFT or eft_scored:
            score = tp
        else:
            score = tk + W * (tp - tk if tk < math.inf else 0.0)
        base[node] = score
        if penalised:
            if not eft_scored and tk < math.inf:
                evictable = _evictable(slots, node, fid, tk, now, retain_cached)
                penalty[node] = evictable * (job_bytes / memory_bytes) / bandwidth
                known[node] = True
            else:
                penalty[node] = 0.0
                known[node] = False
            score = score + eviction_weight * (0.0 if eft_scored else penalty[node])
        scores[node] = score


@njit(cache=True, inline="always")
def _room(node, profile, used, times, has_files, retain_cached, col_of, slot_file, start_times, start_count):
    """Room for a job on ``node`` first, so that it is planned wholly or not
    at all: the row that is full (``NEEDS_*``), and the free column the run's
    file takes on the node (-1 if it has one)."""
    if profile and used + 2 > times.shape[1]:
        return NEEDS_CORE_COLUMNS, -1
    new_column = -1
    if has_files:
        if col_of[node] < 0:
            for candidate in range(slot_file.shape[1]):
                if slot_file[node, candidate] == -1:
                    new_column = candidate
                    break
            if new_column < 0:
                return NEEDS_SLOT_COLUMNS, -1
        if retain_cached and start_count[node] == start_times.shape[1]:
            return NEEDS_START_COLUMNS, -1
    return NEEDS_NOTHING, new_column


@njit(cache=True, inline="always")
def _reserve_cores(node, cores, tk, end, now, profile, avail, times, free, used, reservations, reserved_at, free_now):
    """``CoreProfile.reserve`` or ``CoreAvailability.reserve``; returns the
    new ``used``, ``reservations`` and ``free_now``."""
    if profile:
        reservations += 1
        reserved_at[node] = reservations
        first, used = profile_breakpoint(times, free, node, tk, used)
        stop, used = profile_breakpoint(times, free, node, end, used)
        was_free = free[node, 0] > 0
        free[node, first:stop] -= cores
        if first == 0:
            free_now += int(free[node, 0] > 0) - int(was_free)
    else:
        row = avail[node]
        was_free = row[0] <= now
        row[:cores] = end
        row.sort()
        free_now += int(row[0] <= now) - int(was_free)
    return used, reservations, free_now


@njit(cache=True, inline="always")
def _record_file(node, column, new_column, job, tk, tp, end, retain_cached, slots, starts, col_of, row_bytes_max):
    """``FilePlan.record``: the run's file used on ``node`` over [tk, end),
    in its ``column`` (-1: in ``new_column``); returns the new largest bytes
    of a node's row."""
    _, _, job_bytes, _, fid = job
    slot_file, slot_size, slot_load_start, slot_ready, slot_last_use, slot_evict_at, top, row_bytes = slots
    start_times, start_files, start_count = starts
    if column >= 0 and _present(slot_load_start[node, column], slot_last_use[node, column],
                                slot_evict_at[node, column], tk, retain_cached):
        slot_last_use[node, column] = max(slot_last_use[node, column], end)
    else:
        if column < 0:
            column = new_column
            col_of[node] = column
            slot_file[node, column] = fid
            top[node] = max(top[node], column + 1)
        before = row_bytes[node]
        row_bytes[node] += job_bytes - slot_size[node, column]
        if row_bytes[node] >= row_bytes_max:
            row_bytes_max = row_bytes[node]
        elif before == row_bytes_max:
            row_bytes_max = row_bytes.max()
        slot_size[node, column] = job_bytes
        slot_load_start[node, column] = tk
        slot_ready[node, column] = tp
        slot_last_use[node, column] = end
    if retain_cached:   # the start evicts the other files then cached
        for other in range(top[node]):
            other_file = slot_file[node, other]
            if other_file >= 0 and other_file != fid and slot_last_use[node, other] <= tk \
                    and tk < slot_evict_at[node, other]:
                slot_evict_at[node, other] = tk
        insert_start(start_times, start_files, start_count, node, tk, fid)
        slot_evict_at[node, column] = first_other_start(start_times, start_files, start_count, node,
                                                        slot_last_use[node, column], fid)
    return row_bytes_max


@njit(cache=True)
def plan_run(count, score_all, cores, walltime, job_bytes, load_seconds, fid, now, stop_when_none_free,
             policy_code, lem, busy_threshold, W, eviction_weight, penalised,
             profile, avail, times, free, used, reservations, reserved_at, free_now, busy, busy_count,
             has_files, retain_cached, memory_bytes, bandwidth,
             slot_file, slot_size, slot_load_start, slot_ready, slot_last_use, slot_evict_at, top, row_bytes,
             row_bytes_max, col_of, start_times, start_files, start_count,
             t_k, t_prime, base, penalty, known, scores,
             out_node, out_t_k, out_new_column):
    """Plan up to ``count`` jobs of a run (``README.md`` beside this file). The helpers
    are inlined: a call taking arrays costs about 100 ns here."""
    nb_nodes = busy.shape[0]
    job = (cores, walltime, job_bytes, load_seconds, fid)
    rule = (policy_code, W, eviction_weight, penalised)
    file_model = (has_files, retain_cached, memory_bytes, bandwidth)
    slots = (slot_file, slot_size, slot_load_start, slot_ready, slot_last_use, slot_evict_at, top, row_bytes)
    starts = (start_times, start_files, start_count)
    scored = (t_k, t_prime, base, penalty, known, scores)
    # The nodes to score: every node first (unless the scores are those a
    # run of this kind left, ``score_all`` false), then the node planned.
    score_from, score_to = 0, nb_nodes if score_all else 0
    planned = new_columns = 0
    need = NEEDS_NOTHING
    while True:
        _score_nodes(score_from, score_to, job, now, rule, profile, avail, times, free, used, file_model, slots,
                     col_of, scored)
        if planned == count or (stop_when_none_free and free_now == 0):
            break
        if lem and (EFT if busy_count / nb_nodes < busy_threshold else LEA) != policy_code:
            break
        node = int(np.argmin(scores))
        if scores[node] == math.inf:   # no window anywhere: the job is not planned (backfill skips it)
            out_node[planned], out_t_k[planned], out_new_column[planned] = -1, math.inf, -1
            planned += 1
            score_from = score_to = 0
            continue
        need, new_column = _room(node, profile, used, times, has_files, retain_cached, col_of, slot_file,
                                 start_times, start_count)
        if need != NEEDS_NOTHING:
            break
        tk, tp = t_k[node], t_prime[node]
        end = tk + walltime
        used, reservations, free_now = _reserve_cores(node, cores, tk, end, now, profile, avail, times, free, used,
                                                      reservations, reserved_at, free_now)
        if tk == now and not busy[node]:   # backfill's on_start: Plan.mark_busy
            busy[node] = True
            busy_count += 1
        if has_files:
            row_bytes_max = _record_file(node, col_of[node], new_column, job, tk, tp, end, retain_cached, slots,
                                         starts, col_of, row_bytes_max)
            new_columns += int(new_column >= 0)
        out_node[planned], out_t_k[planned], out_new_column[planned] = node, tk, new_column
        planned += 1
        score_from, score_to = node, node + 1
    return planned, need, free_now, busy_count, row_bytes_max, new_columns, used, reservations
