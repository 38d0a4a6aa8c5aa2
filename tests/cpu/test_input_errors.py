"""Every bad capture file or option is one line and exit status 2, before anything is sized
by its numbers; nothing is reinterpreted (integers stay integers, padding stays padding)."""

import io
import zipfile

import numpy as np
import pytest
import torch

from pageweaver_edu import (
    Capture,
    PageWeaverInputError,
    load_capture,
    save_capture,
    support_sets,
)
from pageweaver_edu.core import capture_files
from tests.helpers.cli import assert_one_line_error, run_main

pytestmark = pytest.mark.filterwarnings("ignore:Duplicate name", "ignore:torch.quantize_per")
G3 = np.array([[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]])


def npy_bytes(arr) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def header_only(shape) -> bytes:
    """An .npy whose header declares int64 ``shape`` and that holds no data."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<i8", "fortran_order": False, "shape": shape})
    return buf.getvalue()


def write_zip(path, members, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in members:
            archive.writestr(name, data)


def pt_with(**fields):
    return lambda p: torch.save({"topk": torch.tensor(G3), **fields}, p)


# (file name, writer, words the one line must contain). Each of these ended in a traceback
# or an allocation sized by the file before.
TRACEBACK_CASES = {
    "bf16 tensor": ("t.pt", lambda p: torch.save(torch.tensor(G3, dtype=torch.bfloat16), p),
                    "torch.bfloat16"),
    "quantized tensor": ("t.pt", lambda p: torch.save({"topk": torch.quantize_per_tensor(
        torch.tensor(G3, dtype=torch.float32), 1.0, 0, torch.qint8)}, p), "quantized"),
    "sparse tensor": ("t.pt", lambda p: torch.save(torch.tensor(G3).to_sparse(), p), "sparse"),
    "mixed key types": ("t.pt", lambda p: torch.save({"topk": torch.tensor(G3), 1: 2}, p),
                        "keys that are not field names"),
    "page_size array": ("t.pt", pt_with(page_size=torch.tensor([128, 128])), "page_size"),
    "page_size None": ("t.pt", pt_with(page_size=None), "page_size"),
    "page_size complex": ("t.pt", pt_with(page_size=1 + 2j), "page_size"),
    "page_size string": ("t.pt", pt_with(page_size="128"), "page_size"),
    "timedelta topk": ("t.npy", lambda p: np.save(p, G3.astype("m8[s]")), "timedelta64"),
    "datetime topk": ("t.npy", lambda p: np.save(p, G3.astype("M8[s]")), "datetime64"),
    "header of 10^6 x 10^6": ("t.npy", lambda p: p.write_bytes(header_only((10**6, 10**6))),
                              "more than the limit"),
    "header longer than the file": ("t.npy", lambda p: p.write_bytes(header_only((10**3, 10**3))),
                                    "declares 8,000,000 bytes"),
    "npz member of 10^6 x 10^6": ("t.npz", lambda p: write_zip(
        p, [("topk.npy", header_only((10**6, 10**6)))]), "more than the limit"),
    "npz lengths of 10^9": ("t.npz", lambda p: write_zip(
        p, [("topk.npy", npy_bytes(G3)), ("lengths.npy", header_only((10**9,)))]),
        "more than the limit"),
    "npz member that is not .npy": ("t.npz", lambda p: write_zip(p, [("topk", b"x")]),
                                    "not an .npy array"),
}


@pytest.mark.parametrize("case", sorted(TRACEBACK_CASES))
def test_bad_capture_is_one_line(tmp_path, case):
    name, writer, needle = TRACEBACK_CASES[case]
    path = tmp_path / name
    writer(path)
    with pytest.raises(PageWeaverInputError):
        load_capture(path)
    assert_one_line_error(*run_main("analyze", path), needle)


def test_zip_bomb_is_refused_from_the_zip_directory(tmp_path, monkeypatch):
    """A small deflated .npz whose members expand past the limit is refused before inflating."""
    monkeypatch.setattr(capture_files, "MAX_UNZIPPED_BYTES", 1 << 20)
    big = np.zeros((1 << 18, 4), dtype=np.int64)  # 8 MiB of zeros, a few KiB deflated
    write_zip(tmp_path / "bomb.npz", [("topk.npy", npy_bytes(big))], zipfile.ZIP_DEFLATED)
    assert (tmp_path / "bomb.npz").stat().st_size < 1 << 16
    assert_one_line_error(*run_main("analyze", tmp_path / "bomb.npz"), "expands to")


def test_huge_capacity_is_refused_not_allocated(tmp_path):
    """One id of 2^31 - 2 with --capacity 2^31 used to build a bitmap sized by that id."""
    np.save(tmp_path / "big.npy", np.full((64, 1), 2**31 - 2, dtype=np.int32))
    code, out, err = run_main("analyze", tmp_path / "big.npy", "--capacity", 2**31)
    assert_one_line_error(code, out, err, "capacity B must be at most 1,048,576")
    code, out, _ = run_main("analyze", tmp_path / "big.npy", "--capacity", 2**20, "--json")
    assert code == 0 and '"chunks_in_fallback": 1' in out  # an id >= B is the fallback


@pytest.mark.parametrize("page_size", [2.9, 0.5, True, "128", np.float64(128.0)])
def test_page_size_is_never_converted(tmp_path, page_size):
    """The CLI and the library agree: page_size 2.9 is an error, not 2."""
    with pytest.raises(PageWeaverInputError, match="page_size must be a positive integer"):
        Capture.from_arrays(G3, page_size=page_size)
    torch.save({"topk": torch.tensor(G3), "page_size": page_size}, tmp_path / "c.pt")
    assert_one_line_error(*run_main("analyze", tmp_path / "c.pt"), "page_size")


def test_timedelta_lengths_are_refused(tmp_path):
    np.savez(tmp_path / "c.npz", topk=G3, lengths=np.arange(6).astype("m8[s]"))
    assert_one_line_error(*run_main("analyze", tmp_path / "c.npz"), "lengths", "timedelta64")


@pytest.mark.parametrize(("chunk", "needle"), [(0, "positive"), (-3, "positive"),
                                               (5, "not a multiple")])
def test_chunk_size_is_checked_without_windows(tmp_path, chunk, needle):
    save_capture(Capture.from_arrays(G3), tmp_path / "c.npz")
    code, out, err = run_main("analyze", tmp_path / "c.npz", "--windows", "",
                              f"--chunk-size={chunk}")
    assert_one_line_error(code, out, err, "chunk size", needle)


def test_zip_with_two_topk_members_is_refused(tmp_path):
    write_zip(tmp_path / "c.npz", [("topk.npy", npy_bytes(G3)), ("topk.npy", npy_bytes(G3[:2]))])
    assert_one_line_error(*run_main("analyze", tmp_path / "c.npz"), "more than one member")


def test_int32_min_is_padding(tmp_path):
    np.save(tmp_path / "t.npy", np.array([[1, -2**31], [-2**31, 3]], dtype=np.int32))
    assert support_sets(load_capture(tmp_path / "t.npy").topk) == [{1}, {3}]
    code, out, _ = run_main("analyze", tmp_path / "t.npy", "--json", "--windows", "8")
    assert code == 0 and '"edges": 2' in out


def test_torch_errors_are_one_line_without_advice(tmp_path):
    (tmp_path / "junk.pt").write_bytes(b"\x80\x02junk")
    torch.save({"topk": torch.tensor(G3), "page_size": np.int64(4)}, tmp_path / "np.pt")
    for name in ("junk.pt", "np.pt"):
        code, out, err = run_main("analyze", tmp_path / name)
        assert_one_line_error(code, out, err, "not a readable torch file")
        assert "weights_only=False" not in err and "trust" not in err


def test_usage_errors_are_one_line(tmp_path):
    assert_one_line_error(*run_main("regroup", tmp_path / "c.npz", "--window", "8.5"),
                          "invalid int value")
