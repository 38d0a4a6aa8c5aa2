"""The accurate FP8 mode of the warp-specialized Union8 (``Fp8WsUnionAttention(accurate=True)``:
two-level E4M3 Q and P over the FP8 cache), beyond the cases every build of
tests/gpu/test_union8ws.py runs (random inputs with 1 to 8 KV heads, masks, empty supports,
packed requests, presets, all against float64 and the emulation, every ordering bitwise
equal): every ring depth and the online plan give the same bits, and the mode takes no fast-mode
option.
"""

from __future__ import annotations

import numpy as np
import pytest

from pageweaver_edu.gpu.union8ws import emulation_options
from tests.gpu.test_union8_fp8 import _check, _tensors
from tests.gpu.test_union8ws import _ws
from tests.helpers.gpu_cases import random_case, run_gpu_plan


def test_ring_depths_and_the_online_plan_are_bitwise_identical():
    import torch

    from pageweaver_edu.gpu import Fp8WsUnionAttention

    rng = np.random.default_rng(31)
    topk, cpos, lens = random_case(rng, 400, 40, 16, 2, True, True)
    q, cache = _tensors(rng, 400, 40, 2)
    out = _ws(q, cache, topk, cpos, lens, accurate=True)
    _check(out, q, cache, topk, cpos, lens, emulation=emulation_options(accurate=True))
    for slots in (2, 4):
        assert torch.equal(out, _ws(q, cache, topk, cpos, lens, slots=slots, accurate=True))
    online, _ = run_gpu_plan(
        lambda plan, c, ln, o: Fp8WsUnionAttention(q, cache, c, ln, out=o,
                                                   accurate=True).run(plan),
        q, topk, cpos, lens)
    assert torch.equal(out, online), "online W128 plan differs from the original order"


def test_accurate_mode_takes_no_fast_mode_option():
    from pageweaver_edu.core.inputs import PageWeaverInputError
    from pageweaver_edu.gpu import Fp8WsUnionAttention

    rng = np.random.default_rng(0)
    q, cache = _tensors(rng, 8, 4, 1)
    for kw in ({"lazy": True}, {"tc_sum": True}):
        with pytest.raises(PageWeaverInputError, match="accurate"):
            Fp8WsUnionAttention(q, cache, accurate=True, **kw)
