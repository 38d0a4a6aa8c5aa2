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
from tests.helpers.fake_gpu import cpu_tensors_as_cuda, install_fake_pycuda


def test_cpu_branch_prints_the_recorded_file(capsys, monkeypatch):
    if device.gpu_available():
        pytest.skip("a GPU is present: the recorded-file branch does not run")
    monkeypatch.delenv(device.ENV_REQUIRE_GPU, raising=False)
    med = live.REGROUP.run().medians
    text = capsys.readouterr().out
    assert "benchmarks/results/gpu_regroup_h200.json" in text and "commit" in text
    assert set(med) == {"gpu_regroup_w64", "gpu_regroup_w128", "gpu_regroup_w64[bits_t64]",
                        "gpu_regroup_w128[bits_t128]"}
    assert "gpu_union_prepare" in live.UNION_PREPARE.run().medians
    monkeypatch.setenv(device.ENV_REQUIRE_GPU, "1")
    with pytest.raises(device.GPUUnavailableError):
        live.REGROUP.run()


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
    run = live.REGROUP.run(reps=7)
    assert run.where == "live on FakeGPU" and run.medians == {
        "gpu_regroup_w64": 12.5, "gpu_regroup_w128": 12.5, "gpu_regroup_w64[bits_t64]": 12.5,
        "gpu_regroup_w128[bits_t128]": 12.5}
    assert [c[1] for c in fake_gpu if c[0] == "variant"] == ["bits_t64", None, "bits_t128", None]
    out = live.UNION_PREPARE.run(reps=7).medians
    assert out == {"gpu_union_prepare": 12.5, "gpu_union_prepare[count kernel only]": 12.5}
    text = capsys.readouterr().out
    assert "live on FakeGPU" in text and "19.3–19.5" in text and "34.6–34.9" in text
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


@pytest.fixture
def stand_in_device(monkeypatch):
    """The real front ends over a recording PyCUDA and CPU tensors; timing calls once."""
    import torch

    import pageweaver_edu.gpu.timing as timing

    log = install_fake_pycuda(monkeypatch)
    cpu_tensors_as_cuda(monkeypatch)
    monkeypatch.setattr(device, "gpu_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "FakeGPU")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(timing, "bench_gpu", lambda fn, *a, **k: (fn(), {"median_us": 7.0})[1])
    return log


def test_attention_cells_run_their_kernels(stand_in_device, capsys):
    from pageweaver_edu import Grouping, greedy_regroup, prepare_unions
    from pageweaver_edu.notebook.union8_live import FP8_UNION8, ONLINE_COST, UNION8
    from pageweaver_edu.replay.fp8 import fp8_union_attention, reference_on_cache
    from pageweaver_edu.replay.fp8_budget import make_case
    from pageweaver_edu.workloads import capture_like_workload, make_preset

    cap = capture_like_workload(n=256, prefix_tokens=2048, seed=0)
    rng = np.random.default_rng(0)
    pages = int(cap.topk.max()) + 1
    q = rng.standard_normal((cap.num_queries, 16, 128)).astype(np.float32)
    k, v = rng.standard_normal((2, pages, 128, 128)).astype(np.float32)
    plans = {"original": prepare_unions(cap.topk),
             "W128": prepare_unions(cap.topk, greedy_regroup(cap.topk, Grouping(128)))}
    run = UNION8.run(q=q, k=k, v=v, capture=cap, plans=plans, rng=rng)
    assert run.where == "live on FakeGPU" and run.medians == {"original": 7.0, "W128": 7.0}
    cap64 = make_preset("cap64k")
    run = ONLINE_COST.run(capture=cap64, fixed_perm=greedy_regroup(cap64.topk, Grouping(128)))
    assert set(run.medians) == {"union8_original", "union8_fixed_w128", "union8_online_w128"}
    small = capture_like_workload(n=48, prefix_tokens=4096, seed=0)
    case = make_case(small.topk, small.causal_pos, small.lengths, seed=0)
    ref = reference_on_cache(case.q, case.kv, small.topk, small.causal_pos, small.lengths)
    emu = fp8_union_attention(case.q, case.kv, small.topk, small.causal_pos, small.lengths)
    run = FP8_UNION8.run(capture=small, case=case, ref=ref, emu=emu)
    assert set(run.medians) == {"original", "W16 regrouped", "Union4"}
    text = capsys.readouterr().out
    assert "NRMS vs float64 (128 rows)" in text and "S_net" in text and "Union4" in text
    launched = {e[1] for e in stand_in_device if e[0] == "launch"}
    assert {"union8_bf16", "regroup_pairs_w128", "union_count", "union_emit", "union8_fp8",
            "union4_fp8"} <= launched
