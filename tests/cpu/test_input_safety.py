"""The safety properties, each guarded by a test that fails when it breaks: no pickle runs,
the capacity fallback's boundaries hold, the CLI passes ``lengths`` on, and no file, however
malformed, gets past the reader as anything but one error line or a valid result."""

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings

from pageweaver_edu import (
    Capture,
    Grouping,
    PageWeaverInputError,
    greedy_regroup,
    greedy_regroup_sets,
    load_capture,
    save_capture,
)
from pageweaver_edu.core.bitmap import decode_bitmap, encode_bitmaps
from pageweaver_edu.core.supports import edge_count
from pageweaver_edu.core.windows import window_table
from tests.helpers.cli import assert_one_line_error, run_main
from tests.helpers.strategies import malformed_capture_files


class Marker:
    """Unpickling this creates the file ``path`` (what hostile code would do first)."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


PICKLE_WRITERS = {
    ".npy": lambda p, m: np.save(p, np.array([[Marker(m)]]), allow_pickle=True),
    ".npz": lambda p, m: np.savez(p, topk=np.array([[Marker(m)]])),
    ".pt": lambda p, m: torch.save({"topk": Marker(m)}, p),
}


@pytest.mark.parametrize("suffix", sorted(PICKLE_WRITERS))
def test_a_pickle_never_runs(tmp_path, suffix):
    """Fails if ``allow_pickle`` were turned on (.npy, .npz) or ``weights_only`` off (.pt): the
    object array is a valid [1, 1] Top-K header, so only those flags stand in the way."""
    marker, path = tmp_path / "ran", tmp_path / f"evil{suffix}"
    PICKLE_WRITERS[suffix](path, marker)
    assert not marker.exists()  # writing it ran nothing
    with pytest.raises(PageWeaverInputError):
        load_capture(path)
    assert_one_line_error(*run_main("analyze", path), str(path))
    assert not marker.exists()


# Rows 0..3 regroup to [0, 2, 1, 3] with g = 2; the identity means the capacity fallback.
ROWS = np.array([[0, 1], [5, 6], [0, 2], [5, 7]])


@pytest.mark.parametrize(("length", "fallback"), [(8192, False), (8193, True)])
def test_lengths_fallback_at_the_ceil_boundary(length, fallback):
    """ceil(8193 / 128) = 65 pages > B = 64: the fallback; floor would say 64 and regroup."""
    lengths = np.full(4, length)
    grouping = Grouping(4, 2, capacity=64)
    table = window_table(ROWS, grouping, lengths=lengths, page_size=128)
    assert table.chunk_fallback.tolist() == [fallback]
    perm = greedy_regroup(ROWS, grouping, lengths=lengths, page_size=128).tolist()
    assert perm == ([0, 1, 2, 3] if fallback else [0, 2, 1, 3])


@pytest.mark.parametrize("top", [64, 128, 192, 512])
def test_largest_page_id_at_a_multiple_of_64(top):
    """Query 1 adds two new pages {top-1, top}, query 2 one: losing the bit of page ``top``
    (a bitmap one lane too narrow) would make it a tie that query 1 wins."""
    rows = np.array([[0, -1], [top - 1, top], [1, -1], [2, 3]])
    grouping = Grouping(4, 2, capacity=top + 1)
    assert greedy_regroup(rows, grouping).tolist() == [0, 2, 1, 3]
    assert greedy_regroup_sets(rows, grouping).tolist() == [0, 2, 1, 3]
    assert decode_bitmap(encode_bitmaps(rows, top + 1)[1]).tolist() == [top - 1, top]


def test_cli_passes_lengths_on(tmp_path):
    """The same rows regroup without lengths and keep the identity with L = 8193, P = 128."""
    cli_args = ["--window", "4", "--group", "2", "--capacity", "64", "--json"]
    for lengths, perm, fallback in ((None, [0, 2, 1, 3], 0), (np.full(4, 8193), [0, 1, 2, 3], 1)):
        path = save_capture(Capture.from_arrays(ROWS, lengths=lengths), tmp_path / "c.npz")
        code, out, _ = run_main("regroup", path, *cli_args)
        assert code == 0 and json.loads(out)["perm"] == perm
        code, out, _ = run_main("analyze", path, "--windows", "4", *cli_args[2:])
        assert code == 0 and json.loads(out)["chunks_in_fallback"] == fallback


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(malformed_capture_files())
def test_any_capture_file_is_one_error_line_or_a_valid_result(case):
    suffix, data = case
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"capture{suffix}"
        path.write_bytes(data)
        code, out, err = run_main("analyze", path, "--json", "--windows", "4", "--group", "2",
                                  "--capacity", "64")
        if code == 2:
            assert_one_line_error(code, out, err)
            with pytest.raises(PageWeaverInputError):
                load_capture(path)
        else:
            capture = load_capture(path)
            report = json.loads(out)
            assert code == 0 and report["queries"] == capture.num_queries
            assert report["edges"] == edge_count(capture.topk)
