"""Every limit of the README's table, on a crafted file at the limit (read) and one step past
it (refused with one line, before the declared data is read or allocated)."""

import io
import zipfile

import numpy as np
import pytest

from pageweaver_edu import Grouping, PageWeaverInputError, load_capture
from pageweaver_edu.core import budget, capture_files, inputs
from pageweaver_edu.core.bitmap import MAX_BITMAP_WORDS, bitmaps_from_canonical
from pageweaver_edu.core.windows import window_table
from tests.helpers.cli import assert_one_line_error, run_main
from tests.helpers.zip_tools import patch_declared


def npy_header(shape, descr="|i1") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": descr, "fortran_order": False, "shape": tuple(shape)})
    return buf.getvalue()


def write_npy(path, shape, extra=0, descr="|i1"):
    """An .npy of zeros declaring ``shape``, holding ``extra`` bytes more (or fewer) data."""
    size = int(np.prod(shape)) * np.dtype(descr).itemsize + extra
    path.write_bytes(npy_header(shape, descr) + bytes(max(size, 0)))
    return path


def refused(path, *needles, extra_args=()):
    with pytest.raises(PageWeaverInputError):
        load_capture(path)
    assert_one_line_error(*run_main("analyze", path, *extra_args), *needles)


@pytest.mark.parametrize(("shape", "past", "needle"), [
    ((inputs.MAX_QUERIES, 1), (inputs.MAX_QUERIES + 1, 1), "N = 4,194,305"),
    ((1, inputs.MAX_TOPK), (1, inputs.MAX_TOPK + 1), "K = 4,097"),
    ((4096, 4096), (4097, 4096), "more than the limit 16,777,216"),
])
def test_topk_shape_at_and_past_the_limit(tmp_path, shape, past, needle):
    assert load_capture(write_npy(tmp_path / "at.npy", shape)).topk.shape == shape
    refused(write_npy(tmp_path / "past.npy", past), needle)


@pytest.mark.parametrize("field", ["lengths", "causal_pos", "request_offsets"])
def test_field_length_at_and_past_the_limit(tmp_path, field):
    """Vectors are refused from their header: a [2^22 + 2] request_offsets is never read."""
    longest = inputs.MAX_REQUESTS + 1 if field == "request_offsets" else inputs.MAX_QUERIES
    n = 0 if field == "request_offsets" else longest
    members = {"topk.npy": npy_header((n, 1)) + bytes(n)}
    for name, size in (("at", longest), ("past", longest + 1)):
        members[f"{field}.npy"] = npy_header((size,)) + bytes(size)
        with zipfile.ZipFile(tmp_path / f"{name}.npz", "w", zipfile.ZIP_DEFLATED) as z:
            for member, data in members.items():
                z.writestr(member, data)
    capture = load_capture(tmp_path / "at.npz")
    assert capture.num_requests == inputs.MAX_REQUESTS if n == 0 else capture.num_queries == n
    refused(tmp_path / "past.npz", field, "more than the limit")


@pytest.mark.parametrize("extra", [-1, 1, 64])
def test_npy_data_must_fill_the_file_exactly(tmp_path, extra):
    """Short by one byte (less than the header's length, so a check that forgets the header
    would pass it) or with anything after the array (a second array) is refused."""
    assert load_capture(write_npy(tmp_path / "at.npy", (64, 4))).topk.shape == (64, 4)
    refused(write_npy(tmp_path / "bad.npy", (64, 4), extra), "declares 256 bytes")


def test_file_size_at_and_past_the_limit(tmp_path):
    """Sparse files: the size alone is refused, nothing is read."""
    with open(tmp_path / "at.npy", "wb") as fh:
        fh.truncate(capture_files.MAX_FILE_BYTES)
    capture_files.check_file(tmp_path / "at.npy")
    with open(tmp_path / "past.npy", "wb") as fh:
        fh.truncate(capture_files.MAX_FILE_BYTES + 1)
    refused(tmp_path / "past.npy", "268,435,457 bytes")


def zip_of(path, members, method=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def declared_zip(tmp_path, name, sizes):
    """A deflated zip whose members declare ``sizes`` (from 256 KiB of noise each, which
    deflate may expand up to 264 MB)."""
    noise = np.random.default_rng(0).bytes(1 << 18)
    path = zip_of(tmp_path / name, {f"m{i}.npy": noise for i in range(len(sizes))})
    for i, size in enumerate(sizes):
        patch_declared(path, f"m{i}.npy", size)
    return path


def test_unzipped_sum_at_and_past_the_limit(tmp_path):
    """The sum over members counts, not each member: two members of half the limit pass, one
    byte more in the second does not (a per-member check would pass both)."""
    half = capture_files.MAX_UNZIPPED_BYTES // 2
    with zipfile.ZipFile(declared_zip(tmp_path, "at.zip", [half, half])) as z:
        assert len(capture_files.zip_members(z, "at")) == 2
    with (zipfile.ZipFile(declared_zip(tmp_path, "past.zip", [half, half + 1])) as z,
          pytest.raises(PageWeaverInputError, match="expands to 268,435,457 bytes")):
        capture_files.zip_members(z, "past")


def test_deflate_ratio_at_and_past_the_limit(tmp_path):
    path = zip_of(tmp_path / "one.zip", {"topk.npy": bytes(1 << 16)})
    with zipfile.ZipFile(path) as z:
        possible = capture_files.DEFLATE_MAX_RATIO * z.getinfo("topk.npy").compress_size + 64
    patch_declared(path, "topk.npy", possible)
    with zipfile.ZipFile(path) as z:
        capture_files.zip_members(z, "at")
    patch_declared(path, "topk.npy", possible + 1)
    with (zipfile.ZipFile(path) as z,
          pytest.raises(PageWeaverInputError, match="more than its method can hold")):
        capture_files.zip_members(z, "past")


def test_member_count_at_and_past_the_limit(tmp_path):
    many = {f"m{i}.npy": b"" for i in range(capture_files.MAX_MEMBERS)}
    with zipfile.ZipFile(zip_of(tmp_path / "at.zip", many)) as z:
        assert len(capture_files.zip_members(z, "at")) == capture_files.MAX_MEMBERS
    many["one_more.npy"] = b""
    refused(zip_of(tmp_path / "past.npz", many), "65 members")


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_block_compressed_members_are_refused_before_inflating(tmp_path, method):
    path = zip_of(tmp_path / "c.npz", {"topk.npy": npy_header((4, 2)) + bytes(8)}, method)
    refused(path, f"compression method {method}")


def test_bitmap_words_at_and_past_the_limit():
    """N · ceil(B / 32) words: 2^15 rows at B = 32,768 is the limit (128 MiB)."""
    rows = np.full((MAX_BITMAP_WORDS // 1024, 1), 32767, dtype=np.int64)
    assert bitmaps_from_canonical(rows, 32768)[0, -1] == 1 << 31
    with pytest.raises(PageWeaverInputError, match="more than the limit 33,554,432"):
        bitmaps_from_canonical(np.zeros((rows.shape[0] + 1, 1), dtype=np.int64), 32768)


def test_regroup_work_at_and_past_the_limit(monkeypatch):
    """rows · lanes · (min(W, longest chunk) + 1024): equal to the limit passes, one unit
    more is refused before any bitmap is built."""
    rows = np.tile(np.arange(64)[:, None], (2, 1))  # 128 rows, ids < 64: one lane
    table = window_table(rows, Grouping(128, 8, capacity=64))
    work = budget.regroup_work(table, [128])
    assert work == 128 * 1 * (128 + budget.ROUND_UNITS)
    monkeypatch.setattr(budget, "MAX_REGROUP_WORK", work)
    budget.check_regroup_work(table, [128])
    monkeypatch.setattr(budget, "MAX_REGROUP_WORK", work - 1)
    with pytest.raises(PageWeaverInputError, match="units of work"):
        budget.check_regroup_work(table, [128])


def test_regroup_work_of_the_cli_is_refused_before_regrouping(tmp_path):
    """2^20 rows of ids up to 8191 at B = 8192 and W = 8192: 2^20 · 64 · 9216 units."""
    ids = (np.arange(1 << 20) % 8192).astype(np.int32)[:, None]
    np.save(tmp_path / "wide.npy", ids)
    assert_one_line_error(*run_main("analyze", tmp_path / "wide.npy", "--capacity", 8192,
                                    "--windows", 8192), "units of work", "more than the limit")


def test_fallback_rows_do_not_widen_the_bitmaps(tmp_path):
    """A chunk under the capacity fallback (id 2^31 - 1) beside a small regrouped one: only
    the regrouped rows are encoded, so the bitmaps stay one lane wide."""
    rows = np.array([[0, 1], [1, 2], [2**31 - 1, 0], [0, 3]])
    np.savez(tmp_path / "c.npz", topk=rows, request_offsets=[0, 2, 4])
    code, out, err = run_main("analyze", tmp_path / "c.npz", "--windows", 2, "--group", 2,
                              "--json")
    assert code == 0 and '"chunks_in_fallback": 1' in out, err


def test_report_chunk_count_at_and_past_the_limit(tmp_path):
    """65,536 one-row requests are reported (every one listed); one more is refused."""
    from pageweaver_edu.report.analysis import MAX_REPORT_CHUNKS

    for n in (MAX_REPORT_CHUNKS, MAX_REPORT_CHUNKS + 1):
        np.savez(tmp_path / f"c{n}.npz", topk=(np.arange(n) % 600).astype(np.int32)[:, None],
                 request_offsets=np.arange(n + 1, dtype=np.int32))
    code, out, err = run_main("report", tmp_path / "c65536.npz", "--out", tmp_path / "r.html",
                              "--json")
    fallback = int((np.arange(MAX_REPORT_CHUNKS) % 600 >= 512).sum())  # ids past B = 512
    assert code == 0 and '"chunks": 65536' in out, err
    assert f'"chunks_in_fallback": {fallback}' in out
    (tmp_path / "r.html").unlink()
    assert_one_line_error(*run_main("report", tmp_path / "c65537.npz", "--out",
                                    tmp_path / "r.html"), "65,537 is more than the limit 65,536")
    assert not (tmp_path / "r.html").exists()


def test_scan_work_at_and_past_the_limit(tmp_path):
    """Entries × passes: 2^20 entries may be measured at 62 windows (64 passes), not 63."""
    entries = 1 << 20
    budget.check_scan_work(entries, budget.MAX_SCAN_WORK // entries, "at")
    np.save(tmp_path / "c.npy", np.zeros((entries // 4, 4), np.int32))
    windows = ",".join(str(8 * w) for w in range(1, 64))
    assert_one_line_error(*run_main("analyze", tmp_path / "c.npy", "--windows", windows),
                          "65 times over 1,048,576 Top-K entries")
