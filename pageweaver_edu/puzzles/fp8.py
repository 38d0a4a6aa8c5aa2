"""Puzzle 7: FP8 E4M3 row quantization of Q and of P with the kernels' scale rules.

Checked bit for bit against :func:`pageweaver_edu.replay.e4m3.quantize_q_rows` (one scale
``amax / 448`` per row, values multiplied by ``448 / amax``) and
:func:`pageweaver_edu.replay.e4m3.to_e4m3` of ``p * 2^P_SCALE_LOG2`` (probabilities shifted by
2^8 before the conversion).
"""

from __future__ import annotations

import numpy as np

from ..replay.e4m3 import quantize_q_rows, to_e4m3
from ..replay.fp8 import P_SCALE_LOG2
from .checks import TODO, Case, Puzzle
from .engine import Kernel

DIM = 32

FP8_STARTER = f"""\
// One warp per row of 32 values, lane d holds x = row[d]. pw_to_e4m3(f) (given) converts a
// float to its E4M3 byte: round to nearest even, saturating at +-448 (cvt.rn.satfinite).
// Q: amax = max over the row of |x|; return the byte of x * (448 / amax) (0 when amax = 0)
//    and have lane 0 write the row's dequantization scale amax / 448 to *scale.
__device__ unsigned char quantize_q(float x, float* scale) {{
  // {TODO}
  return 0;
}}
// P: a probability p in [0, 1] from the online softmax. Return its E4M3 byte after the
// kernels' shift by 2^{P_SCALE_LOG2} (small probabilities keep their mantissa bits; l and O are
// divided by the same 2^{P_SCALE_LOG2} at the end).
__device__ unsigned char quantize_p(float p) {{
  // {TODO}
  return 0;
}}
"""

FP8_HARNESS = """\
__global__ void quantize_rows(const float* x, const float* p, unsigned char* q8, float* scale,
                              unsigned char* p8) {
  const int row = blockIdx.x, lane = threadIdx.x;
  q8[row * 32 + lane] = quantize_q(x[row * 32 + lane], scale + row);
  p8[row * 32 + lane] = quantize_p(p[row * 32 + lane]);
}
"""
FP8 = Kernel("quantize_rows", (("const float*", "x"), ("const float*", "p"),
                               ("unsigned char*", "q8"), ("float*", "scale"),
                               ("unsigned char*", "p8")), harness=FP8_HARNESS)


def _fp8_cases(rng: np.random.Generator) -> list[Case]:
    def make(name, x, p):
        return Case(name, {"x": np.asarray(x, np.float32).reshape(-1, DIM),
                           "p": np.asarray(p, np.float32).reshape(-1, DIM)})

    rows = 4
    cases = [make("random rows", rng.standard_normal((rows, DIM)) * rng.uniform(0.01, 50, rows)
                  [:, None], np.exp2(-rng.uniform(0, 14, (rows, DIM))))]
    neg = rng.standard_normal((1, DIM))
    neg[0, 5] = -40.0  # the largest magnitude is negative
    tiny = np.r_[2.0 ** -np.arange(0, 32, 1.0)] * (1 - 2 * (np.arange(DIM) % 2))
    cases.append(make("largest value negative, a zero row", np.r_[neg, np.zeros((1, DIM))],
                      np.r_[np.ones(DIM), np.zeros(DIM)]))
    cases.append(make("magnitudes from 1 down to 2^-31 (subnormal bytes)", tiny,
                      2.0 ** -np.arange(0, 32, 1.0)))
    return cases


def _byte(b: int) -> str:
    b = int(b)
    sign, exponent, mantissa = b >> 7, (b >> 3) & 15, b & 7
    if exponent == 15 and mantissa == 7:  # E4M3 has no infinity: S.1111.111 is its NaN
        return f"0x{b:02x} (NaN)"
    value = (2.0 ** (exponent - 7) * (1 + mantissa / 8) if exponent
             else 2.0 ** -6 * mantissa / 8) * (-1) ** sign
    return f"0x{b:02x} ({value:g})"


def _fp8_run(launch, case: Case) -> str | None:
    import torch

    x, p = case.data["x"], case.data["p"]
    n = len(x)
    q8 = np.zeros(n * DIM, np.uint8)
    p8 = np.zeros(n * DIM, np.uint8)
    scale = np.full(n, np.nan, np.float32)
    launch(n, 32, [x, p, q8, scale, p8])
    want_q8, want_scale = quantize_q_rows(torch.from_numpy(x))
    want_q8 = want_q8.view(torch.uint8).numpy().ravel()
    want_scale = want_scale.numpy()
    want_p8 = to_e4m3(torch.from_numpy(p) * 2.0 ** P_SCALE_LOG2).view(torch.uint8).numpy().ravel()
    for row in range(n):
        amax = float(np.abs(x[row]).max())
        if scale[row].tobytes() != want_scale[row].tobytes():
            return (f"row {row} (amax = max |x| = {amax:g}): scale = {float(scale[row]):.9g}, "
                    f"expected amax / 448 = {float(want_scale[row]):.9g}")
        for d in range(DIM):
            at = row * DIM + d
            if q8[at] != want_q8[at]:
                return (f"Q row {row}, lane {d}: x = {float(x[row, d]):.9g}, amax = {amax:g}: "
                        f"byte {_byte(q8[at])}, expected {_byte(want_q8[at])} = "
                        f"e4m3(x * (448 / amax))")
            if p8[at] != want_p8[at]:
                return (f"P row {row}, lane {d}: p = {float(p[row, d]):.9g}: byte "
                        f"{_byte(p8[at])}, expected {_byte(want_p8[at])} = "
                        f"e4m3(p * 2^{P_SCALE_LOG2})")
    return None


FP8_ROWS = Puzzle(7, "FP8 E4M3 row quantization of Q and P", FP8, FP8_STARTER,
                  "p7_quantize_rows.cu", _fp8_cases, _fp8_run,
                  ("union8_fp8.cu", "fp8-q-quantize"))
