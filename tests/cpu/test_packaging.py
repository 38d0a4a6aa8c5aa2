"""The wheel ships the CUDA sources; the console script is installed."""

import subprocess
import sys
import zipfile
from pathlib import Path

from pageweaver_edu.kernels import KERNEL_DIR, kernel_path

ROOT = Path(__file__).resolve().parents[2]


def test_kernel_sources_found_from_the_installed_package():
    assert kernel_path("pageweaver_common.cuh").read_text().startswith("//")
    assert sorted(KERNEL_DIR.glob("*.cuh"))


def test_wheel_contains_every_kernel_source(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(ROOT)],
        check=True, timeout=300,
    )
    (wheel,) = tmp_path.glob("pageweaver_edu-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"pageweaver_edu/kernels/{p.name}" for p in (ROOT / "kernels").glob("*.cu*")}
    assert shipped and shipped <= names
    assert "pageweaver_edu/cli.py" in names
    assert {"pageweaver_edu/gpu/loader.py", "pageweaver_edu/notebook/live.py"} <= names


def test_console_script_runs():
    script = Path(sys.executable).with_name("pageweaver")
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "analyze" in proc.stdout
