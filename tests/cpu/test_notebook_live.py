"""The live-cell helper and the loader's launch path, exercised on a CPU.

The GPU branches run for real only on the H200 runner (nbval with PAGEWEAVER_REQUIRE_GPU=1);
here they run against stand-ins (a fake ``pycuda`` and CPU versions of the GPU entry points)
so that their control flow, arguments and printed text are checked on every machine.
"""

from __future__ import annotations

import numpy as np
import pytest

from pageweaver_edu.gpu import device, loader
from pageweaver_edu.notebook import live
from tests.helpers.fake_gpu import install_fake_pycuda


def test_cpu_branch_prints_the_recorded_file(capsys, monkeypatch):
    if device.gpu_available():
        pytest.skip("a GPU is present: the recorded-file branch does not run")
    monkeypatch.delenv(device.ENV_REQUIRE_GPU, raising=False)
    med = live.live_regroup()
    text = capsys.readouterr().out
    assert "benchmarks/results/gpu_regroup_h200.json" in text and "commit" in text
    assert set(med) == {"gpu_regroup_w64", "gpu_regroup_w128", "gpu_regroup_w64[bits_t64]",
                        "gpu_regroup_w128[bits_t128]"}
    assert "gpu_union_prepare" in live.live_union_prepare()
    monkeypatch.setenv(device.ENV_REQUIRE_GPU, "1")
    with pytest.raises(device.GPUUnavailableError):
        live.gpu_or_recorded("gpu_regroup_h200")


@pytest.fixture
def fake_gpu(monkeypatch):
    """Pretend the GPU path runs: CPU stand-ins for the kernels, ``.cuda()`` a no-op."""
    import torch

    import pageweaver_edu.gpu as g
    import pageweaver_edu.gpu.timing as timing
    from pageweaver_edu import greedy_regroup, prepare_unions

    calls = []
    monkeypatch.setattr(device, "gpu_available", lambda: True)
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "FakeGPU")

    def regroup(topk, grouping, variant=None, **kw):
        calls.append(("variant", variant))
        return torch.from_numpy(greedy_regroup(topk, grouping, **kw).astype(np.int32))

    class Plan:
        def __init__(self, *args):
            calls.append(("plan", args))

        def run(self, topk, *rest):
            assert topk.dim() == 3 and topk.dtype == torch.int32
            return torch.zeros((1, topk.shape[1]), dtype=torch.int32)

        count = run

    class Prepared:
        def __init__(self, topk, perm, offsets, group):
            self.args = (topk, perm, offsets, group)

        def to_cpu(self):
            return prepare_unions(*self.args)

    def bench(fn, reps=200, **kw):
        fn()
        calls.append(("bench", reps))
        return {"median_us": 12.5}

    monkeypatch.setattr(g, "gpu_greedy_regroup", regroup)
    monkeypatch.setattr(g, "regroup_launch", Plan)
    monkeypatch.setattr(g, "union_prep_launch", Plan)
    monkeypatch.setattr(g, "gpu_prepare_unions", Prepared)
    monkeypatch.setattr(timing, "bench_gpu", bench)
    return calls


def test_gpu_branches_with_stand_ins(fake_gpu, capsys):
    assert live.live_regroup(reps=7) == {
        "gpu_regroup_w64": 12.5, "gpu_regroup_w128": 12.5, "gpu_regroup_w64[bits_t64]": 12.5,
        "gpu_regroup_w128[bits_t128]": 12.5}
    assert [c[1] for c in fake_gpu if c[0] == "variant"] == ["bits_t64", None, "bits_t128", None]
    out = live.live_union_prepare(reps=7)
    assert out == {"gpu_union_prepare": 12.5, "gpu_union_prepare[count kernel only]": 12.5}
    text = capsys.readouterr().out
    assert "live on FakeGPU" in text and "19.30" in text and "34.60" in text
    assert text.count("True") == 5 and "No GPU" not in text
    assert [c for c in fake_gpu if c[0] == "bench"] == [("bench", 7)] * 6


@pytest.fixture
def fake_pycuda(monkeypatch):
    """A stand-in ``pycuda`` that records compile options, attributes and launches."""
    return install_fake_pycuda(monkeypatch)


def test_union8_compiles_and_launches_through_the_loader(fake_pycuda):
    from pageweaver_edu.gpu import Bf16UnionAttention as u8

    f8, smem = u8.kernel(8, 2)
    f4, _ = u8.kernel(4, 2)
    f8b, _ = u8.kernel(8, 2)
    _, smem3 = u8.kernel(8, 3)
    assert f8b is f8 and smem == u8.smem_bytes(2) > 48 * 1024 and smem3 == u8.smem_bytes(3)
    compiles = [e for e in fake_pycuda if e[0] == "compile"]
    opts = (*loader.NVCC_OPTIONS, "-DPW_UNION_SLOTS=2")
    assert compiles[0] == ("compile", "compute_90a", "sm_90a", opts)  # one module for both
    assert compiles[1][3][-1] == "-DPW_UNION_SLOTS=3" and len(compiles) == 2
    attrs = [e for e in fake_pycuda if e[0] == "attr"]
    assert ("attr", "union8_bf16", "MAXDYN", smem) in attrs
    assert ("attr", "union4_bf16", "MAXDYN", smem) in attrs
    loader.launch(f8, (6, 2), (128, 1, 1), 1, 2, shared_size=smem)
    loader.launch(f8, (0, 2), (128, 1, 1), 1, 2, shared_size=smem)  # empty grid: no launch
    launches = [e for e in fake_pycuda if e[0] == "launch"]
    assert launches == [("launch", "union8_bf16", (6, 2), (128, 1, 1), None, (1, 2), smem)]


def test_plain_kernels_keep_device_arch_and_no_dynamic_smem(fake_pycuda):
    f = loader.get_kernel("regroup.cu", "regroup_pairs_w64", "PPPPPPqiiiiii")
    loader.launch(f, (3, 1), (64, 1, 1), 5)
    assert ("compile", "sm_90", None, tuple(loader.NVCC_OPTIONS)) in fake_pycuda
    assert not [e for e in fake_pycuda if e[0] == "attr"]
    assert fake_pycuda[-1] == ("launch", "regroup_pairs_w64", (3, 1), (64, 1, 1), None, (5,), 0)
