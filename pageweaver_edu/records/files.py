"""Finding and reading recorded result files (``benchmarks/results/<stem>.json``).

Notebooks show these on CPU-only machines in place of a live run; every reader goes through
:func:`recorded_results` (one named file) or :func:`list_records` (every file a pattern
matches, archived ones included). A GPU result file is named after the device that ran it
(:func:`device_tag`: ``..._h100.json``, ``..._h200.json``); a stem that ends in a device tag
names that result as last recorded on any device.
"""

from __future__ import annotations

import glob
import json
import os
import re
from pathlib import Path

ENV_RESULTS = "PAGEWEAVER_RESULTS_DIR"
ROOT = Path(__file__).resolve().parents[2]


def results_dirs() -> list[Path]:
    """Folders searched, in order: $PAGEWEAVER_RESULTS_DIR, the checkout, ./ and ../."""
    dirs = []
    if os.environ.get(ENV_RESULTS):
        dirs.append(Path(os.environ[ENV_RESULTS]))
    dirs.append(ROOT / "benchmarks" / "results")
    cwd = Path.cwd()
    dirs += [cwd / "benchmarks" / "results", cwd.parent / "benchmarks" / "results"]
    return dirs


_DEVICE_MODEL = re.compile(r"\b([A-Z]{1,2}\d{2,4})\b")
_DEVICE_SUFFIX = re.compile(r"_[a-z]{1,2}\d{2,4}$")


def device_tag(device: str) -> str:
    """The file-name tag of a device: its model, lower case (``"NVIDIA H100 80GB HBM3"`` ->
    ``"h100"``, ``"NVIDIA H200"`` -> ``"h200"``); ``"gpu"`` when the name holds no model."""
    m = _DEVICE_MODEL.search(device or "")
    return m.group(1).lower() if m else "gpu"


def _candidates(folder: Path, stem: str) -> list[Path]:
    """The files of ``stem`` in ``folder``: the stem itself, or when it ends in a device tag,
    the same result on every device."""
    m = _DEVICE_SUFFIX.search(os.path.basename(stem))
    if m is None:
        return [p for p in (folder / f"{stem}.json",) if p.is_file()]
    base = stem[:len(stem) - len(m.group(0))]
    return [Path(p) for p in sorted(glob.glob(str(folder / f"{glob.escape(base)}_*.json")))
            if _DEVICE_SUFFIX.fullmatch("_" + Path(p).stem[len(os.path.basename(base)) + 1:])]


def recorded_results(name: str = "gpu_regroup_h200", any_device: bool = True) -> dict:
    """Load ``benchmarks/results/<name>.json``; for a stem that ends in a device tag
    (``_h200``), the newest (by ``date``) of that result on any device.

    Parameters
    ----------
    name : str
        File stem (``.json`` optional), e.g. ``"gpu_regroup_h200"``, or an absolute path.
    any_device : bool
        False: that file itself, whatever other devices recorded (a reader that sets several
        files side by side keeps them on one device).

    Returns
    -------
    dict
        ``{"device", "date", "commit", "driver", "cuda", "workload", "results": [...]}``, and
        ``file``: the name of the file read (for a device-tagged stem, the device that won).
    """
    stem = name[:-5] if name.endswith(".json") else name
    for folder in results_dirs():
        paths = (_candidates(folder, stem) if any_device
                 else [p for p in (folder / f"{stem}.json",) if p.is_file()])
        found = [(json.loads(p.read_text(encoding="utf-8")), p.name) for p in paths]
        found = [(r, file) for r, file in found if isinstance(r, dict)]
        if found:
            record, file = max(found, key=lambda rf: str(rf[0].get("date", "")))
            return {**record, "file": file}
    searched = ", ".join(str(d) for d in results_dirs())
    raise FileNotFoundError(f"no recorded result {stem}.json in: {searched}")


def result_medians(record: dict) -> dict[str, float]:
    """``{name: median_us}`` of a loaded record (rows without a median are left out)."""
    return {r["name"]: float(r["median_us"]) for r in record.get("results", [])
            if isinstance(r, dict) and "name" in r and "median_us" in r}


def record_header(rec: dict) -> str:
    """One line: device, date, driver, CUDA and commit of a recorded result file."""
    return (f"  {rec.get('device')}, {rec.get('date')}, driver {rec.get('driver')}, "
            f"CUDA {rec.get('cuda')}, commit {rec.get('commit')}")


def list_records(root: str, pattern: str = "*union8*") -> list[dict]:
    """Every ``benchmarks/results/<pattern>.json`` under ``root``.

    Parameters
    ----------
    root : str
        The checkout.
    pattern : str
        Glob of the file stem. It also matches archived files (e.g. ``*_v1_rowcopies``): to
        show one result, name its stem.

    Returns
    -------
    list of dict
        Each file's content with its ``path`` (relative to ``root``) added; empty while
        nothing has been recorded.
    """
    out = []
    for path in sorted(glob.glob(os.path.join(root, "benchmarks", "results", pattern + ".json"))):
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if isinstance(data, dict):
            out.append({**data, "path": os.path.relpath(path, root)})
    return out


def latest_record(root: str, workload: str, pattern: str = "*union8*", kv_heads: int = 1):
    """The newest file of :func:`list_records` (by its ``date``) for a workload.

    Parameters
    ----------
    root, pattern
        As :func:`list_records`.
    workload : str
        The file's ``workload`` (a preset name).
    kv_heads : int
        The file's ``kv_heads`` (1 when absent).

    Returns
    -------
    dict or None
    """
    files = [f for f in list_records(root, pattern)
             if f.get("workload") == workload and f.get("kv_heads", 1) == kv_heads]
    return max(files, key=lambda f: str(f.get("date", ""))) if files else None
