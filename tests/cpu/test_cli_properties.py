"""Random captures through the ``pageweaver`` command, checked against invariants recomputed
here from the definitions alone (docs/definitions.md): π is a bijection inside every request
and every chunk; a chunk whose largest id reaches B, or whose ``ceil(max L_i / P)`` (with the
file's P) exceeds B, keeps the identity order; union visits are Σ_G |∪ S_i| over request-local
blocks of g slots of the executed order."""

import json
import math
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.cli import assert_one_line_error, run_main


@st.composite
def cli_captures(draw):
    """(fields of an .npz capture, g, W, B, chunk size)."""
    group = draw(st.sampled_from([1, 2, 4, 8]))
    window = group * draw(st.integers(1, 4))
    chunk = draw(st.one_of(st.none(), st.integers(1, 3).map(lambda c: c * group)))
    capacity = draw(st.sampled_from([4, 8, 32, 64]))
    n, k = draw(st.integers(1, 40)), draw(st.integers(1, 4))
    small = st.integers(0, capacity - 1)
    entry = st.one_of(small, small, small, small, st.integers(capacity, capacity + 2),
                      st.just(-1))
    topk = np.array(draw(st.lists(entry, min_size=n * k, max_size=n * k))).reshape(n, k)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=3)))
    fields = {"topk": topk, "request_offsets": np.array([0, *cuts, n])}
    if draw(st.booleans()):
        page_size = draw(st.sampled_from([16, 64, 128, 256]))
        fields["page_size"] = np.int64(page_size)
        fields["lengths"] = np.array(draw(st.lists(
            st.integers(0, (capacity + 2) * page_size), min_size=n, max_size=n)))
    return fields, group, window, capacity, chunk


def chunks_of(offsets, chunk):
    for start, end in zip(offsets[:-1], offsets[1:], strict=True):
        step = chunk or max(end - start, 1)
        for s in range(start, end, step):
            yield s, min(s + step, end)


def needs_fallback(fields, start, end, capacity) -> bool:
    ids = fields["topk"][start:end]
    need = int(ids.max(initial=-1)) + 1
    if "lengths" in fields:
        page_size = int(fields["page_size"])
        need = max(need, math.ceil(int(fields["lengths"][start:end].max()) / page_size))
    return need > capacity


def union_visits(topk, perm, offsets, group) -> int:
    sets = [{int(p) for p in row if p >= 0} for row in topk]
    total = 0
    for start, end in zip(offsets[:-1], offsets[1:], strict=True):
        for g0 in range(start, end, group):
            total += len(set().union(*(sets[perm[s]] for s in range(g0, min(g0 + group, end)))))
    return total


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cli_captures())
def test_cli_regroup_and_analyze_hold_the_invariants(case):
    fields, group, window, capacity, chunk = case
    offsets = [int(x) for x in fields["request_offsets"]]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.npz"
        np.savez(path, **fields)
        opts = ["--group", group, "--capacity", capacity, "--json"]
        opts += [] if chunk is None else ["--chunk-size", chunk]
        code, out, err = run_main("regroup", path, "--window", window, *opts)
        assert code == 0, err
        perm = json.loads(out)["perm"]
        code, out, err = run_main("analyze", path, "--windows", window, *opts)
        assert code == 0, err
        report = json.loads(out)
    spans = list(chunks_of(offsets, chunk))
    fallback = [needs_fallback(fields, s, e, capacity) for s, e in spans]
    for (start, end), identity in zip(spans, fallback, strict=True):
        assert sorted(perm[start:end]) == list(range(start, end))  # a bijection per chunk
        if identity:
            assert perm[start:end] == list(range(start, end))
        for w0 in range(start, end, window):  # windows are regrouped on their own rows
            assert sorted(perm[w0:min(w0 + window, end)]) == list(range(w0, min(w0 + window, end)))
    assert report["chunks_in_fallback"] == sum(fallback)
    assert report["chunks"] == len(spans)
    identity_order = list(range(len(perm)))
    assert report["union_visits"]["original"] == union_visits(fields["topk"], identity_order,
                                                              offsets, group)
    assert report["union_visits"][f"W{window}"] == union_visits(fields["topk"], perm, offsets,
                                                                group)


def test_lengths_must_be_one_per_query(tmp_path):
    """lengths of shape [N, 1] is refused, not flattened."""
    np.savez(tmp_path / "c.npz", topk=[[0, 1], [1, 2]], lengths=[[5], [6]])
    assert_one_line_error(*run_main("analyze", tmp_path / "c.npz"), "lengths must have shape")


def test_the_files_page_size_is_used(tmp_path):
    """ceil(80 / 16) = 5 pages > B = 4: identity. With P = 128 it would be 1 page, and rows
    {0, 1}, {2, 3}, {0, 1}, {2, 3} would regroup to [0, 2, 1, 3]."""
    np.savez(tmp_path / "c.npz", topk=[[0, 1], [2, 3], [0, 1], [2, 3]], lengths=[80] * 4,
             page_size=16)
    opts = ["--group", 2, "--capacity", 4, "--json"]
    code, out, err = run_main("regroup", tmp_path / "c.npz", "--window", 4, *opts)
    assert code == 0 and json.loads(out)["perm"] == [0, 1, 2, 3], err
    code, out, err = run_main("analyze", tmp_path / "c.npz", "--windows", 4, *opts)
    assert code == 0 and json.loads(out)["chunks_in_fallback"] == 1, err
    np.savez(tmp_path / "c.npz", topk=[[0, 1], [2, 3], [0, 1], [2, 3]], lengths=[80] * 4)
    code, out, err = run_main("regroup", tmp_path / "c.npz", "--window", 4, *opts)
    assert code == 0 and json.loads(out)["perm"] == [0, 2, 1, 3], err


def test_an_id_equal_to_b_in_a_chunks_last_row_falls_back(tmp_path):
    """Page 4 needs 5 pages > B = 4, and it sits in the chunk's last row; without it the rows
    would regroup to [0, 2, 1, 3]."""
    np.savez(tmp_path / "c.npz", topk=[[0, 1], [2, 3], [0, 1], [0, 4]])
    opts = ["--window", 4, "--group", 2, "--json"]
    code, out, err = run_main("regroup", tmp_path / "c.npz", "--capacity", 4, *opts)
    assert code == 0 and json.loads(out)["perm"] == [0, 1, 2, 3], err
    code, out, err = run_main("regroup", tmp_path / "c.npz", "--capacity", 5, *opts)
    assert code == 0 and json.loads(out)["perm"] == [0, 2, 1, 3], err
