"""Structure-aware fuzzing of the capture readers, run in a child process under a memory cap.

Each case is a file built from a valid capture with its structure bent the way a damaged or
hostile file would bend it: ``.npy`` headers (version, dtype, order, shapes up to 2^62, data
short, exact or followed by more), zip archives (member names, repeats, counts, compression
methods, declared sizes rewritten in the directory) and torch archives (dtypes, stride-0,
transposed and strided views, meta, negative, conjugate, nested, sparse and quantized tensors,
subclasses, lists, the legacy format, storages cut short). Every case must end in a
:class:`~pageweaver_edu.core.inputs.PageWeaverInputError` or a capture, within the time cap;
the parent test sets the memory cap (:mod:`tests.helpers.memory_cap`) and reads one JSON
line per case.

Run as ``python -m tests.helpers.fuzz_captures SEED COUNT FOLDER``.
"""

from __future__ import annotations

import io
import json
import random
import resource
import signal
import struct
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

SIZES = [0, 1, 3, 7, 1 << 22, (1 << 22) + 1, 1 << 31, 1 << 62]
DESCRS = ["<i8", "<i4", "|i1", "<u8", ">i8", "<f8", "|b1", "|O", "V8", "<M8[s]", "<c8"]
FIELDS = ["topk", "request_offsets", "lengths", "causal_pos", "page_size", "other"]


def npy_case(rng: random.Random) -> bytes:
    version = rng.choice([1, 1, 1, 2, 3])
    ndim = rng.choice([0, 1, 2, 2, 2, 3])
    shape = tuple(rng.choice(SIZES[:4]) if rng.random() < 0.8 else rng.choice(SIZES)
                  for _ in range(ndim))
    descr = rng.choice(DESCRS)
    header = repr({"descr": descr, "fortran_order": rng.random() < 0.2, "shape": shape})
    if rng.random() < 0.1:
        header = header.replace("),", "L),").replace(", ", "L, ", 1)  # Python 2 style
    raw = header.encode("latin1")
    pre = 10 if version == 1 else 12
    raw += b" " * (-(pre + len(raw) + 1) % 64) + b"\n"
    size = struct.pack("<H" if version == 1 else "<I", len(raw))
    if rng.random() < 0.05:
        size = struct.pack("<H" if version == 1 else "<I", rng.choice([0, 1, 65535]))
    try:
        itemsize = np.dtype(descr).itemsize
    except TypeError:
        itemsize = 8
    count = int(np.prod(shape)) if shape else 1
    data_len = count * itemsize if count * itemsize <= 1 << 16 else rng.choice([0, 64, 4096])
    data_len = max(0, data_len + rng.choice([0, 0, 0, -1, 1, 64]))
    data = bytes(rng.getrandbits(8) & 7 for _ in range(min(data_len, 4096)))
    data += bytes(data_len - len(data))
    return b"\x93NUMPY" + bytes([version, 0]) + size + raw + data


def rewrite_sizes(raw: bytes, rng: random.Random) -> bytes:
    """Declared uncompressed sizes in the central directory, bent."""
    out = bytearray(raw)
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        if rng.random() < 0.4:
            size = rng.choice([0, 1, 1 << 20, (1 << 28) + 1, (1 << 32) - 1])
            struct.pack_into("<I", out, at + 24, size)
        at = out.find(b"PK\x01\x02", at + 4)
    return bytes(out)


def npz_case(rng: random.Random) -> bytes:
    buf = io.BytesIO()
    members = rng.choice([1, 2, 3, 5, 70]) if rng.random() < 0.1 else rng.randint(1, 4)
    with zipfile.ZipFile(buf, "w") as archive:
        for i in range(members):
            name = rng.choice(FIELDS) + rng.choice([".npy", ".npy", ".npy", "", ".txt"])
            if members > 5:
                name = f"m{i}.npy"
            method = rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED,
                                 zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
            body = npy_case(rng) if rng.random() < 0.5 else valid_npy(rng)
            archive.writestr(zipfile.ZipInfo(name), body, compress_type=method)  # repeats too
    raw = buf.getvalue()
    return rewrite_sizes(raw, rng) if rng.random() < 0.3 else raw


def valid_npy(rng: random.Random) -> bytes:
    buf = io.BytesIO()
    n, k = rng.randint(0, 9), rng.randint(1, 4)
    np.save(buf, np.array([rng.randint(-1, 40) for _ in range(n * k)]).reshape(n, k))
    return buf.getvalue()


def tensor_case(rng: random.Random):
    import torch

    base = torch.tensor([[rng.randint(-1, 30) for _ in range(4)] for _ in range(6)])
    kind = rng.choice(["plain", "expand", "transpose", "step", "meta", "neg", "conj", "nested",
                       "sparse", "quantized", "parameter", "float", "list", "huge_expand",
                       "bool", "int8", "view_offset"])
    if kind == "expand":
        return torch.zeros(1, dtype=torch.int64).expand(rng.choice([8, 1 << 20]), 4)
    if kind == "huge_expand":
        return torch.zeros(1, dtype=torch.int64).expand(1 << 24, 1 << 10)
    if kind == "transpose":
        return base.t()
    if kind == "step":
        return base[:, ::2]
    if kind == "meta":
        return torch.empty(6, 4, dtype=torch.int64, device="meta")
    if kind == "neg":
        return torch._neg_view(base.double())
    if kind == "conj":
        return base.to(torch.complex64).conj()
    if kind == "nested":
        return torch.nested.nested_tensor([base, base[:2]])
    if kind == "sparse":
        return base.to_sparse()
    if kind == "quantized":
        return torch.quantize_per_tensor(base.float(), 1.0, 0, torch.qint8)
    if kind == "parameter":
        return torch.nn.Parameter(base, requires_grad=False)
    if kind == "float":
        return base.float()
    if kind == "list":
        return [[0] * 64] * rng.choice([4, 1 << 16])
    if kind == "bool":
        return base > 3
    if kind == "int8":
        return base.to(torch.int8)
    if kind == "view_offset":
        return torch.arange(64)[8:32].view(6, 4)
    return base


def pt_case(rng: random.Random) -> bytes:
    import torch

    obj = tensor_case(rng)
    if rng.random() < 0.6:
        obj = {"topk": obj}
        if rng.random() < 0.3:
            obj[rng.choice(FIELDS)] = tensor_case(rng)
        if rng.random() < 0.1:
            obj["page_size"] = rng.choice([64, 0, -1, True, 2.5, 1 << 70])
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=rng.random() < 0.9)
    raw = buf.getvalue()
    if raw[:2] == b"PK" and rng.random() < 0.3:  # cut a storage short or stretch it
        src = zipfile.ZipFile(io.BytesIO(raw))
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as dst:
            for info in src.infolist():
                body = src.read(info)
                if "/data/" in info.filename and body:
                    body = body[:rng.randint(0, len(body) - 1)] if rng.random() < 0.7 else (
                        body * 3)
                dst.writestr(info.filename, body)
        raw = out.getvalue()
    if rng.random() < 0.1:
        raw = raw[:rng.randint(0, len(raw))]
    return raw


FAMILIES = {".npy": npy_case, ".npz": npz_case, ".pt": pt_case}


def _alarm(signum, frame):
    raise TimeoutError("case ran past its time cap")


def main(seed: int, count: int, folder: Path, cap_s: int = 10) -> None:
    import warnings

    from pageweaver_edu import PageWeaverInputError, load_capture

    warnings.simplefilter("ignore")  # building the cases warns (repeated zip names)
    signal.signal(signal.SIGALRM, _alarm)
    rng = random.Random(seed)
    for i in range(count):
        suffix = rng.choice(sorted(FAMILIES))
        path = folder / f"case{i}{suffix}"
        path.write_bytes(FAMILIES[suffix](rng))
        start = time.perf_counter()
        signal.alarm(cap_s)
        try:
            load_capture(path)
            outcome = "read"
        except PageWeaverInputError as exc:
            outcome = "refused" if "\n" not in str(exc) else f"multi-line: {exc!r}"
        except BaseException as exc:  # noqa: BLE001 - every other ending is what we look for
            outcome = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            signal.alarm(0)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(json.dumps({"case": i, "file": path.name, "outcome": outcome,
                          "s": round(time.perf_counter() - start, 3), "peak_mib": peak}),
              flush=True)
        path.unlink()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
