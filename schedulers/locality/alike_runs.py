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


@njit(cache=True)
def plan_run(count, score_all, cores, walltime, job_bytes, load_seconds, fid, now, stop_when_none_free,
             policy_code, lem, busy_threshold, W, eviction_weight, penalised,
             profile, avail, times, free, used, reservations, reserved_at, free_now, busy, busy_count,
             has_files, retain_cached, memory_bytes, bandwidth,
             slot_file, slot_size, slot_load_start, slot_ready, slot_last_use, slot_evict_at, top, row_bytes,
             row_bytes_max, col_of, start_times, start_files, start_count,
             t_k, t_prime, base, penalty, known, scores,
             out_node, out_t_k, out_new_column):
    # Helpers taking arrays cost about 100 ns a call here (reference counts), so the scoring loop's code is inline.
    nb_nodes = busy.shape[0]
    # The nodes to score: every node first (unless the scores are those a
    # run of this kind left, ``score_all`` false), then the node planned.
    score_from, score_to = 0, nb_nodes if score_all else 0
    planned = new_columns = 0
    need = NEEDS_NOTHING
    while True:
        for node in range(score_from, score_to):   # NodeScores' lines 3-8
            if profile:   # CoreProfile.earliest_on: the first window of Cores(J) cores for WallTime(J)
                # Read forward: a window starts where a stretch of columns with
                # Cores(J) free starts, and fits once the stretch reaches
                # WallTime(J) later (a column at or after that time, or its end).
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
                evictable = 0.0   # FilePlan.eviction_penalty_on
                if not eft_scored and tk < math.inf:
                    for column in range(top[node]):
                        other = slot_file[node, column]
                        if other >= 0 and other != fid and _unused(slot_last_use[node, column],
                                                                    slot_evict_at[node, column], tk, now,
                                                                    retain_cached):
                            evictable += slot_size[node, column]
                    penalty[node] = evictable * (job_bytes / memory_bytes) / bandwidth
                    known[node] = True
                else:
                    penalty[node] = 0.0
                    known[node] = False
                score = score + eviction_weight * (0.0 if eft_scored else penalty[node])
            scores[node] = score
        if planned == count or (stop_when_none_free and free_now == 0):
            break
        if lem and (EFT if busy_count / nb_nodes < busy_threshold else LEA) != policy_code:
            break
        node = int(np.argmin(scores))
        if scores[node] == math.inf:   # no window anywhere: the job is not planned (backfill skips it)
            out_node[planned] = -1
            out_t_k[planned] = math.inf
            out_new_column[planned] = -1
            planned += 1
            score_from = score_to = 0
            continue
        # Room first, so that a job is planned wholly or not at all.
        if profile and used + 2 > times.shape[1]:
            need = NEEDS_CORE_COLUMNS
            break
        column = new_column = -1
        if has_files:
            column = col_of[node]
            if column < 0:
                for candidate in range(slot_file.shape[1]):
                    if slot_file[node, candidate] == -1:
                        new_column = candidate
                        break
                if new_column < 0:
                    need = NEEDS_SLOT_COLUMNS
                    break
            if retain_cached and start_count[node] == start_times.shape[1]:
                need = NEEDS_START_COLUMNS
                break
        tk, tp = t_k[node], t_prime[node]
        end = tk + walltime
        if profile:   # CoreProfile.reserve
            reservations += 1
            reserved_at[node] = reservations
            first, used = profile_breakpoint(times, free, node, tk, used)
            stop, used = profile_breakpoint(times, free, node, end, used)
            was_free = free[node, 0] > 0
            free[node, first:stop] -= cores
            if first == 0:
                free_now += int(free[node, 0] > 0) - int(was_free)
        else:   # CoreAvailability.reserve
            row = avail[node]
            was_free = row[0] <= now
            row[:cores] = end
            row.sort()
            free_now += int(row[0] <= now) - int(was_free)
        if tk == now and not busy[node]:   # backfill's on_start: Plan.mark_busy
            busy[node] = True
            busy_count += 1
        if has_files:   # FilePlan.record
            if column >= 0 and _present(slot_load_start[node, column], slot_last_use[node, column],
                                        slot_evict_at[node, column], tk, retain_cached):
                slot_last_use[node, column] = max(slot_last_use[node, column], end)
            else:
                if column < 0:
                    column = new_column
                    new_columns += 1
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
            if retain_cached:
                for other in range(top[node]):
                    other_file = slot_file[node, other]
                    if other_file >= 0 and other_file != fid and slot_last_use[node, other] <= tk \
                            and tk < slot_evict_at[node, other]:
                        slot_evict_at[node, other] = tk
                insert_start(start_times, start_files, start_count, node, tk, fid)
                slot_evict_at[node, column] = first_other_start(start_times, start_files, start_count, node,
                                                                slot_last_use[node, column], fid)
        out_node[planned] = node
        out_t_k[planned] = tk
        out_new_column[planned] = new_column
        planned += 1
        score_from, score_to = node, node + 1
    return planned, need, free_now, busy_count, row_bytes_max, new_columns, used, reservations
