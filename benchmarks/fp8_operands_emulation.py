"""Which operands make an accurate FP8 mode? A CPU study of the arithmetic, every preset.

The FP8 KV cache stays; what changes is the A operand of the two products. Emulated with
``replay.fp8.fp8_union_attention(operands=...)`` on the presets' Top-K rows (random BF16
Q/K/V drawn on the CPU, seed 0, one KV head, a sample of rows), against float64 on the FP8
cache:

* ``e4m3`` — Q and P in E4M3 (the fast mode, the paper's arithmetic);
* ``two_level`` — Q and P as a high plus a low E4M3 part on one scale (four more QK k-steps,
  a second PV product: the FP8 tensor cores and the FP8 ring as they are);
* ``bf16`` — Q as read and P in BF16, K/V widened to BF16 (BF16 tensor cores, twice the
  shared-memory bytes per page, a widening pass per page).

For ``two_level`` it also reports each stage alone (the rest in float64), as
``replay.fp8_budget`` does for the fast mode. Writes ``results/fp8_operands_emulation.json``.

Usage: ``python benchmarks/fp8_operands_emulation.py [--presets cap64k,...] [--rows 128]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from fp8_lazy_emulation import preset_sample

from pageweaver_edu.replay.fp8 import OPERANDS, fp8_union_attention, nrms
from pageweaver_edu.replay.fp8_budget import STAGE_SWITCHES
from pageweaver_edu.workloads import preset_names

RESULTS = Path(__file__).resolve().parent / "results"


def preset_study(name: str, rows: int) -> dict:
    """NRMS vs float64 of every operand choice, and of each stage of ``two_level`` alone."""
    qs, kv, ts, cs, ls, ref = preset_sample(name, rows)

    def run(**kw):
        return nrms(fp8_union_attention(qs, kv, ts, cs, ls, **kw).float(), ref)

    out = {"rows": len(qs), "total": {op: run(operands=op) for op in OPERANDS}}
    out["two_level_stages"] = {stage: run(operands="two_level", **sw)
                               for stage, sw in STAGE_SWITCHES.items() if stage != "total"}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default=",".join(preset_names()))
    ap.add_argument("--rows", type=int, default=128)
    args = ap.parse_args(argv)
    record = {"date": time.strftime("%Y-%m-%d"), "device": "cpu", "rows": args.rows,
              "presets": {}}
    print(f"{'preset':22s} " + " ".join(f"{op:>10s}" for op in OPERANDS)
          + "   two_level stages: q / p / fp32 / bf16 out")
    for name in (p for p in args.presets.split(",") if p):
        r = preset_study(name, args.rows)
        record["presets"][name] = r
        st = r["two_level_stages"]
        print(f"{name:22s} " + " ".join(f"{100 * r['total'][op]:9.3f}%" for op in OPERANDS)
              + "   " + " / ".join(f"{100 * st[s]:.3f}%" for s in st), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "fp8_operands_emulation.json").write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
