"""Execute the notebook series in place and keep the committed files small and clean.

Usage: python tools/run_notebooks.py [NOTEBOOK ...]   (default: notebooks/NN_*.ipynb)

Each notebook is executed top to bottom with nbclient, then cleaned: saved widget state and
per-cell execution timestamps are dropped and widget views keep only their text fallback, so
what is committed is deterministic text plus small static figures. The time each notebook
took is printed at the end.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
MAX_BYTES = 1_000_000


def clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drop widget state, widget views and timing metadata from an executed notebook."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data and WIDGET_VIEW in data:
                data.pop(WIDGET_VIEW)
                data["text/plain"] = "(interactive widget: run the notebook to use it)"
    return nb


def execute(path: Path) -> float:
    """Run one notebook in its own folder; returns the seconds it took."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    seconds = time.perf_counter() - start
    nbformat.write(clean(nb), path)
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise SystemExit(f"{path.name} is {size:,} bytes after execution (limit {MAX_BYTES:,})")
    return seconds


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    timings = [(p.name, execute(p)) for p in paths]
    for name, seconds in timings:
        print(f"{name:<36}{seconds:8.1f} s")
    print(f"{'total':<36}{sum(s for _, s in timings):8.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
