"""The capture readers under structure-aware fuzzing (:mod:`tests.helpers.fuzz_captures`):
every case ends in a capture or one PageWeaverInputError line, each within 10 s, and the
child process that reads them all stays under a 3 GiB data cap (:mod:`tests.helpers.memory_cap`:
going past it fails the child, which fails the test) and a 1 GiB peak RSS. ``PAGEWEAVER_FUZZ_SEED``
picks another set of cases."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.memory_cap import cap_data

CASES = 200
CAP_RSS_MIB = 1024
ROOT = Path(__file__).resolve().parents[2]



def test_fuzzed_captures_are_read_or_refused_within_the_caps(tmp_path):
    seed = os.environ.get("PAGEWEAVER_FUZZ_SEED", "1")
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.run(
        [sys.executable, "-m", "tests.helpers.fuzz_captures", seed, str(CASES), str(tmp_path)],
        capture_output=True, text=True, timeout=240, preexec_fn=cap_data, env=env,
        cwd=ROOT)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and len(rows) == CASES, (proc.returncode, proc.stderr[-2000:],
                                                         rows[-1:])
    bad = [r for r in rows if r["outcome"] not in ("read", "refused")]
    assert not bad, bad
    assert max(r["s"] for r in rows) < 10
    assert max(r["peak_mib"] for r in rows) < CAP_RSS_MIB
    assert {r["outcome"] for r in rows} == {"read", "refused"}  # the cases reach both ends
