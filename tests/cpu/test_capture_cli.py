"""Capture I/O and the ``pageweaver`` command end to end, including every error path."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from pageweaver_edu import Capture, PageWeaverInputError, load_capture, save_capture
from pageweaver_edu.cli import main

G3 = np.array([[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]])


def run_cli(*args, env=None):
    """Run the installed console script; returns (exit code, stdout, stderr)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pageweaver_edu.cli", *map(str, args)],
        capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})},
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def g3_npz(tmp_path):
    return save_capture(Capture.from_arrays(G3, page_size=4), tmp_path / "g3.npz")


def test_roundtrip_npz_npy_pt(tmp_path):
    cap = Capture.from_arrays(G3, [0, 2, 6], lengths=np.arange(6) + 1, causal_pos=np.arange(6))
    back = load_capture(save_capture(cap, tmp_path / "c.npz"))
    for name in ("topk", "request_offsets", "lengths", "causal_pos"):
        assert np.array_equal(getattr(back, name), getattr(cap, name))
    np.save(tmp_path / "t.npy", G3)
    assert np.array_equal(load_capture(tmp_path / "t.npy").topk, G3)
    torch.save({"topk": torch.tensor(G3), "page_size": 64}, tmp_path / "d.pt")
    assert load_capture(tmp_path / "d.pt").page_size == 64
    torch.save(torch.tensor(G3, dtype=torch.int32), tmp_path / "t.pt")
    assert np.array_equal(load_capture(tmp_path / "t.pt").topk, G3)


@pytest.mark.parametrize(
    ("name", "writer", "message"),
    [
        ("missing.npz", None, "not found"),
        ("x.txt", lambda p: p.write_text("hello"), "unknown capture format"),
        ("x.npz", lambda p: p.write_text("not a zip"), "not a valid .npz"),
        ("x.npz", lambda p: np.savez(p, pages=G3), "no 'topk'"),
        ("x.npz", lambda p: np.savez(p, topk=G3, extra=G3), "unknown fields"),
        ("x.npy", lambda p: np.save(p, G3.astype(float)), "integer dtype"),
        ("x.npy", lambda p: np.save(p, G3[0]), "2-D"),
        ("x.pt", lambda p: p.write_bytes(b"junk"), "not a readable torch file"),
        ("x.pt", lambda p: torch.save([1, 2], p), "not a tensor or dict"),
        ("x.npz", lambda p: np.savez(p, topk=G3, request_offsets=[0, 5]), "end at N = 6"),
    ],
)
def test_bad_capture_files(tmp_path, name, writer, message):
    path = tmp_path / name
    if writer:
        writer(path)
    with pytest.raises(PageWeaverInputError, match=message):
        load_capture(path)
    code, out, err = run_cli("analyze", path)
    assert code == 2 and out == ""
    assert err.startswith("pageweaver: error:") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_analyze_json(g3_npz, capsys):
    assert main(["analyze", str(g3_npz), "--windows", "6", "--group", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["union_visits"] == {"original": 10, "W6": 7}
    assert report["edges"] == 12 and report["rho"]["original"] == 1.2
    assert set(report["c4"]) == {"original", "W6"}


def test_analyze_table_and_progress_on_stderr(g3_npz):
    forced = {"PAGEWEAVER_PROGRESS": "1"}  # a bar even though stderr is a pipe here
    code, out, err = run_cli("analyze", g3_npz, "--windows", "3,6", "--group", "3", env=forced)
    assert code == 0
    assert "union visits" in out and "W6" in out and "-30.00%" in out
    assert "regroup" in err and "/2" in err and "regroup" not in out
    code, _, err = run_cli("analyze", g3_npz, "--windows", "3,6", "--group", "3")
    assert code == 0 and err == ""  # not a terminal: no bar


def test_analyze_json_is_silent(g3_npz):
    code, out, err = run_cli("analyze", g3_npz, "--windows", "6", "--group", "3", "--json",
                             env={"PAGEWEAVER_PROGRESS": "1"})
    assert code == 0 and json.loads(out)["union_visits"]["W6"] == 7 and err == ""


def test_regroup_json_and_out(g3_npz, tmp_path, capsys):
    assert main(["regroup", str(g3_npz), "--window", "6", "--group", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"perm": [0, 2, 3, 1, 4, 5]}
    out = tmp_path / "perm.npy"
    assert main(["regroup", str(g3_npz), "--window", "6", "--group", "3", "--out", str(out)]) == 0
    assert np.load(out).tolist() == [0, 2, 3, 1, 4, 5]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["regroup", "{f}", "--window", "12", "--group", "8"], "not a multiple of the group size"),
        (["regroup", "{f}", "--window", "8", "--chunk-size", "12"], "chunk size 12"),
        (["analyze", "{f}", "--windows", "6,x"], "--windows must be integers"),
        (["analyze", "{f}", "--group", "0"], "group size g must be a positive integer"),
        (["workload", "no-such-preset", "--out", "{d}/w.npz"], "no-such-preset"),
    ],
)
def test_cli_user_errors(g3_npz, tmp_path, args, message):
    args = [a.format(f=g3_npz, d=tmp_path) for a in args]
    code, out, err = run_cli(*args)
    assert code == 2 and message in err and "Traceback" not in err


def test_overflowing_ids_are_a_user_error(tmp_path):
    np.save(tmp_path / "big.npy", np.array([[2**33]], dtype=np.int64))
    code, _, err = run_cli("analyze", tmp_path / "big.npy")
    assert code == 2 and "outside -2147483648..2147483647" in err
