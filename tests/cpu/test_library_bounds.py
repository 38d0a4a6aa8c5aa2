"""Public functions validate their arguments into one PageWeaverInputError line: no NaN output
from a scale that overflows, no float counts, no raw NumPy or torch error, nothing allocated
before its size is checked."""

import numpy as np
import pytest
import torch

from pageweaver_edu import Capture, Grouping, PageWeaverInputError, load_capture
from pageweaver_edu.core.attention import reference_attention
from pageweaver_edu.core.inputs import to_numpy
from pageweaver_edu.core.supports import token_support
from pageweaver_edu.core.union_metrics import window_visits
from pageweaver_edu.pagepairs.traffic import partial_bytes
from pageweaver_edu.regroup.bitmap import greedy_regroup
from pageweaver_edu.replay.e4m3 import quantize_kv
from pageweaver_edu.replay.fp8 import fp8_union_attention
from pageweaver_edu.replay.regroup_cost import regroup_cost
from pageweaver_edu.workloads.generators import capture_like_workload
from tests.helpers.cli import assert_one_line_error, run_main

TOPK = np.array([[0, 1], [1, 2], [0, 2], [2, -1]])
RNG = np.random.default_rng(0)
Q, K = RNG.standard_normal((4, 2, 8)), RNG.standard_normal((3, 4, 8))

CALLS = {
    "scale 1e308": (lambda: reference_attention(Q, K, K, TOPK, scale=1e308), "overflow"),
    "scale 1e300 on large q, k": (
        lambda: reference_attention(Q * 1e10, K * 1e10, K, TOPK, scale=1e300), "overflow"),
    "scale nan": (lambda: reference_attention(Q, K, K, TOPK, scale=float("nan")), "finite"),
    "float query count": (lambda: regroup_cost(10.5, 8), "queries N"),
    "negative query count": (lambda: regroup_cost(-1, 8), "queries N"),
    "float partials": (lambda: partial_bytes(2.5), "partials"),
    "float union sizes": (lambda: window_visits(TOPK, None, Grouping(4, 2),
                                                union_sizes=[1.5, 2.0]), "integer dtype"),
    "union sizes of another length": (lambda: window_visits(
        TOPK, None, Grouping(4, 2), union_sizes=[1, 2, 3]), "one entry per group"),
    "an int for a Grouping": (lambda: greedy_regroup(TOPK, 8), "must be a Grouping"),
    "P = 2^40": (lambda: token_support([0, 1], 2**40), "more than the limit"),
    "run_mean inf": (lambda: capture_like_workload(64, 1024, run_mean=float("inf")),
                     "run_mean"),
    "expanded tensor of 2^36 elements": (lambda: to_numpy(
        torch.zeros(1, dtype=torch.int64).expand(1 << 20, 1 << 16), "x"), "more than the limit"),
    "nested list of 2^36 elements": (lambda: Capture.from_arrays([[0] * 65536] * (1 << 20)),
                                     "more than the limit"),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_bad_argument_is_one_error_line(name):
    call, needle = CALLS[name]
    with pytest.raises(PageWeaverInputError, match=needle) as info:
        call()
    assert "\n" not in str(info.value)


@pytest.fixture(scope="module")
def fp8_case():
    torch.manual_seed(0)
    kv = quantize_kv(torch.randn(3, 1, 128, 64), torch.randn(3, 1, 128, 64))
    return torch.randn(4, 16, 64), kv


@pytest.mark.parametrize("scale", [float("nan"), float("inf"), -0.125, 0.0, 1e308])
def test_fp8_scale_is_positive_and_finite(fp8_case, scale):
    """A negative scale would flip the kernel's max-subtraction (the reference does not)."""
    q, kv = fp8_case
    with pytest.raises(PageWeaverInputError, match="scale"):
        fp8_union_attention(q, kv, TOPK, scale=scale)
    assert torch.isfinite(fp8_union_attention(q, kv, TOPK, scale=0.125).float()).all()


@pytest.mark.parametrize(("name", "tensor", "refusal"), [
    ("stride 0", torch.zeros(1, dtype=torch.int64).expand(8, 4), "has strides (0, 0)"),
    ("every other column", torch.zeros(8, 8, dtype=torch.int64)[:, ::2], "has strides (8, 2)"),
    ("transposed", torch.arange(32).reshape(4, 8).t(), None),
    ("offset view", torch.arange(64)[8:40].view(8, 4), None),
])
def test_pt_tensor_strides(tmp_path, name, tensor, refusal):
    torch.save({"topk": tensor}, tmp_path / "c.pt")
    if refusal is None:
        assert np.array_equal(load_capture(tmp_path / "c.pt").topk, tensor.numpy())
    else:
        assert_one_line_error(*run_main("analyze", tmp_path / "c.pt"), refusal)


def test_report_on_no_queries_and_a_group_past_the_curve(tmp_path):
    np.save(tmp_path / "empty.npy", np.zeros((0, 4), np.int32))
    assert_one_line_error(*run_main("report", tmp_path / "empty.npy", "--out",
                                    tmp_path / "r.html"), "no query rows")
    np.save(tmp_path / "c.npy", TOPK)
    code, out, err = run_main("report", tmp_path / "c.npy", "--group", 600, "--windows", 600,
                              "--out", tmp_path / "r.html", "--json")
    assert code == 0 and '"rho_per_window": {"W600"' in out, err
