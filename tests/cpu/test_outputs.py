"""Outputs: exactly the path given, never the input, written atomically, the real path printed."""

import os

import numpy as np
import pytest

from pageweaver_edu import Capture, PageWeaverInputError, save_capture
from pageweaver_edu.core.outputs import write_atomically
from tests.helpers.cli import assert_one_line_error, run_main

G3 = np.array([[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]])
PERM = [0, 2, 3, 1, 4, 5]


def regroup(capture, out):
    return run_main("regroup", capture, "--window", "6", "--group", "3", "--out", out)


@pytest.fixture
def capture(tmp_path):
    np.save(tmp_path / "x.npy", G3)
    return tmp_path / "x.npy"


def test_out_onto_the_input_is_refused(capture, tmp_path):
    before = capture.read_bytes()
    os.link(capture, tmp_path / "hard.npy")
    os.symlink(capture, tmp_path / "soft.npy")
    for out in (capture, tmp_path / "hard.npy", tmp_path / "soft.npy", tmp_path / "." / "x.npy"):
        assert_one_line_error(*regroup(capture, out), "is the input file")
    assert capture.read_bytes() == before


@pytest.mark.parametrize("name", ["perm.npz", "perm", "perm.NPY.txt"])
def test_out_with_another_suffix_is_refused(capture, tmp_path, name):
    assert_one_line_error(*regroup(capture, tmp_path / name), "must end in .npy")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]  # no perm.npz.npy


def test_out_that_is_a_folder_is_refused(capture, tmp_path):
    (tmp_path / "somedir").mkdir()
    (tmp_path / "d.npy").mkdir()
    assert_one_line_error(*regroup(capture, tmp_path / "somedir"), "must end in .npy")
    assert_one_line_error(*regroup(capture, tmp_path / "d.npy"), "is a folder")
    assert not (tmp_path / "somedir.npy").exists() and not any((tmp_path / "d.npy").iterdir())
    assert_one_line_error(*regroup(capture, tmp_path / "no" / "p.npy"), "does not exist")


def test_out_is_written_where_asked_and_the_real_path_printed(capture, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = regroup(capture, "perm.npy")
    assert code == 0 and out.strip().endswith(f"written to {tmp_path.resolve() / 'perm.npy'}")
    assert np.load(tmp_path / "perm.npy").tolist() == PERM
    assert_one_line_error(*run_main("workload", "cap16k-high-overlap", "--out", "w.npy"),
                          "must end in .npz")
    code, out, _ = run_main("workload", "cap16k-high-overlap", "--out", "w.npz")
    assert code == 0 and out.strip().endswith(f"to {tmp_path.resolve() / 'w.npz'}")
    assert sorted(os.listdir(tmp_path)) == ["perm.npy", "w.npz", "x.npy"]


def test_a_failed_write_leaves_the_old_file(tmp_path):
    """The content goes to a temporary file in the same folder, renamed only when complete."""
    target = tmp_path / "perm.npy"
    target.write_bytes(b"old")

    def half_write(fh):
        fh.write(b"half")
        raise OSError("disk full")

    with pytest.raises(PageWeaverInputError, match="could not write .*perm.npy: disk full"):
        write_atomically(target, ".npy", half_write)
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["perm.npy"]
    written = write_atomically(target, ".npy", lambda fh: np.save(fh, np.arange(3)))
    assert written == target.resolve() and np.load(target).tolist() == [0, 1, 2]
    assert os.listdir(tmp_path) == ["perm.npy"]


def test_save_capture_writes_exactly_the_path(tmp_path):
    written = save_capture(Capture.from_arrays(G3), tmp_path / "c.npz")
    assert written == (tmp_path / "c.npz").resolve() and os.listdir(tmp_path) == ["c.npz"]
    with pytest.raises(ValueError, match="must end in .npz"):
        save_capture(Capture.from_arrays(G3), tmp_path / "c")


def test_out_that_is_not_a_regular_file_is_refused(capture, tmp_path):
    """A pipe (as a device or a socket would be) is never replaced by a regular file, neither
    named directly nor behind a symlink; a symlink loop is one line too."""
    os.mkfifo(tmp_path / "pipe.npy")
    os.symlink(tmp_path / "pipe.npy", tmp_path / "to_pipe.npy")
    os.symlink("loop.npy", tmp_path / "loop.npy")
    for out in ("pipe.npy", "to_pipe.npy"):
        assert_one_line_error(*regroup(capture, tmp_path / out), "not a regular file")
    assert_one_line_error(*regroup(capture, tmp_path / "loop.npy"), "cannot be resolved")
    assert (tmp_path / "pipe.npy").is_fifo() and (tmp_path / "to_pipe.npy").is_symlink()


@pytest.mark.parametrize(("out", "needle"), [("", "the output path is empty"),
                                             ("x" * 252 + ".npy", "file name is longer")])
def test_empty_or_too_long_out_is_refused(capture, tmp_path, out, needle):
    path = out and tmp_path / out
    assert_one_line_error(*regroup(capture, path), needle)
    assert sorted(os.listdir(tmp_path)) == ["x.npy"]


def test_longest_name_is_written(capture, tmp_path):
    """A 255-byte name fits (the temporary file's name does not grow with it)."""
    code, _, err = regroup(capture, tmp_path / ("x" * 251 + ".npy"))
    assert code == 0, err


def test_replaced_file_keeps_its_permissions(capture, tmp_path):
    """A 0600 file behind a symlink is replaced in place: the link stays, the mode stays."""
    (tmp_path / "private.npy").write_bytes(b"old")
    os.chmod(tmp_path / "private.npy", 0o600)
    os.symlink("private.npy", tmp_path / "link.npy")
    code, _, err = regroup(capture, tmp_path / "link.npy")
    assert code == 0, err
    assert (tmp_path / "link.npy").is_symlink()
    assert np.load(tmp_path / "private.npy").tolist() == PERM
    assert (tmp_path / "private.npy").stat().st_mode & 0o777 == 0o600


def test_a_full_disk_names_the_file(capture, tmp_path, monkeypatch):
    def no_space(fh, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "save", no_space)
    assert_one_line_error(*regroup(capture, tmp_path / "p.npy"), "could not write",
                          str(tmp_path / "p.npy"), "No space left on device")
    assert sorted(os.listdir(tmp_path)) == ["x.npy"]


def test_a_latin1_terminal_gets_one_line_not_a_traceback(capture, tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "pageweaver_edu.cli", "regroup", str(capture),
                           "--window", "6", "--group", "3"], capture_output=True,
                          env={**os.environ, "PYTHONIOENCODING": "latin-1"})
    assert proc.returncode == 0 and proc.stdout.startswith(b"\\u03c0 for 6 queries"), proc


def test_a_capture_that_is_a_symlink_loop_is_one_line(tmp_path):
    """``report`` checks its output against the capture before reading it: a capture path
    that loops is one line there too."""
    os.symlink("c.npy", tmp_path / "c.npy")
    for args in (("report", "--out", tmp_path / "r.html"), ("analyze",)):
        assert_one_line_error(*run_main(args[0], tmp_path / "c.npy", *args[1:]), "not found")
