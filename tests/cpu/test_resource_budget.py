"""Small hostile files that used to cost gigabytes or minutes, through the real ``pageweaver``
command in a child process: each ends in one error line (exit 2) or a result within 30 s, under
a 3 GiB data cap (:mod:`tests.helpers.memory_cap`) and below 2 GiB peak RSS."""

import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.helpers.memory_cap import cap_data
from tests.helpers.zip_tools import patch_declared

ROOT = Path(__file__).resolve().parents[2]
BUDGET_S, BUDGET_RSS_KIB = 30, 2 << 20


def bz2_bomb(path: Path) -> None:
    """A bzip2 member whose directory declares its 136-byte head and which inflates to 64 MiB
    more: bzip2 inflates a whole block at once, past any declared size."""
    head = npy_bytes(np.zeros((4, 2), np.int8))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_BZIP2) as archive, \
            archive.open("topk.npy", "w") as fh:
        fh.write(head)
        for _ in range(4):
            fh.write(bytes(1 << 24))
    patch_declared(path, "topk.npy", len(head))


def npy_bytes(arr) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def many_members(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(5000):
            archive.writestr(f"m{i}.npy", b"")


CASES = {
    "bz2 member": ("analyze", "c.npz", bz2_bomb),
    "stride-0 tensor": ("analyze", "c.pt", lambda p: torch.save(
        {"topk": torch.zeros(1, dtype=torch.int64).expand(1 << 24, 8)}, p)),
    "nested-list bomb": ("analyze", "c.pt", lambda p: torch.save(
        {"topk": [[[0] * 4096] * 4096] * 8}, p)),
    "5,000 members": ("analyze", "c.npz", many_members),
    "3e7 empty requests": ("analyze", "c.npz", lambda p: np.savez_compressed(
        p, topk=np.zeros((0, 1), np.int8), request_offsets=np.zeros(30_000_001, np.int8))),
    "B = 2^20 bitmaps": ("analyze --capacity 1048576", "c.npy", lambda p: np.save(
        p, np.full((8192, 1), (1 << 20) - 1, np.int32))),
    "2^20 one-row chunks": ("analyze --chunk-size 8 --windows 8", "c.npy", lambda p: np.save(
        p, np.zeros((1 << 20, 1), np.int32))),
    "2,000 fallback requests": ("report --out r.html", "c.npz", lambda p: np.savez(
        p, topk=np.full((2000, 1), 1000, np.int32),
        request_offsets=np.arange(2001, dtype=np.int32))),
}



@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_file_within_the_budget(tmp_path, name):
    args, file_name, write = CASES[name]
    write(tmp_path / file_name)
    command, *options = args.split()
    env = dict(os.environ, PYTHONPATH=str(ROOT), PAGEWEAVER_PROGRESS="0")
    timed = ["/usr/bin/time", "-f", "%e %M"] if Path("/usr/bin/time").exists() else []
    proc = subprocess.run(
        [*timed, sys.executable, "-m", "pageweaver_edu.cli", command, file_name, *options],
        capture_output=True, text=True, timeout=BUDGET_S, preexec_fn=cap_data, env=env,
        cwd=tmp_path)
    lines = proc.stderr.splitlines()
    if timed:
        seconds, kib = lines.pop().split()
        assert float(seconds) < BUDGET_S and int(kib) < BUDGET_RSS_KIB, (seconds, kib)
    lines = [line for line in lines if not line.startswith("Command exited")]
    assert proc.returncode in (0, 2), proc.stderr[-2000:]
    if proc.returncode == 2:
        assert len(lines) == 1 and lines[0].startswith("pageweaver: error: "), lines
