"""The kernel puzzles on the CPU simulator: every reference solution passes, every plausible
wrong answer fails with its message, an unsolved starter says so, and the simulator itself
keeps CUDA's semantics (collectives, deadlocks, crashes, endless loops, E4M3 rounding)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pageweaver_edu.puzzles import PUZZLES, check, engine, real_kernel, reference_solution
from pageweaver_edu.puzzles.engine import (
    Kernel,
    PuzzleLaunchError,
    compiler_missing,
    gpu_source,
    launch,
)
from tests.helpers.puzzle_answers import WRONG_ANSWERS
from tests.helpers.sass_tools import NVCC

pytestmark = pytest.mark.skipif(compiler_missing() is not None,
                                reason=str(compiler_missing()))


@pytest.mark.parametrize("number", sorted(PUZZLES))
def test_reference_solution_passes(number):
    result = check(PUZZLES[number], reference_solution(number), quiet=True)
    assert result.solved, result.message
    assert real_kernel(result).code  # the real kernel's excerpt opens


@pytest.mark.parametrize("wrong", WRONG_ANSWERS, ids=lambda w: f"p{w.puzzle}-{w.name}")
def test_wrong_answer_fails_with_its_message(wrong):
    result = check(PUZZLES[wrong.puzzle], wrong.source(), quiet=True, seed=1234)
    assert not result.solved
    assert wrong.expect in result.message, result.message
    assert "seed 1234" in result.message


def test_every_puzzle_has_two_wrong_answers():
    counts = {n: sum(w.puzzle == n for w in WRONG_ANSWERS) for n in PUZZLES}
    assert min(counts.values()) >= 2, counts


@pytest.mark.parametrize("number", sorted(PUZZLES))
def test_starter_is_not_solved_and_never_raises(number, capsys):
    result = check(PUZZLES[number], PUZZLES[number].starter)
    assert not result.solved
    assert "not solved yet" in capsys.readouterr().out
    assert "Solve puzzle" in real_kernel(result)


def test_same_seed_same_cases():
    cases = [PUZZLES[3].cases(np.random.default_rng(7)) for _ in range(2)]
    assert all(np.array_equal(a.data["topk"], b.data["topk"]) for a, b in zip(*cases, strict=True))


KERNEL = Kernel("probe", (("int*", "out"),))


def run_probe(body: str, block: int = 32) -> np.ndarray:
    out = np.zeros(block * 8, np.int32)
    launch(KERNEL, f"__global__ void probe(int* out) {{\n{body}\n}}", 1, block, [out])
    return out.reshape(8, block)


def test_warp_collectives_follow_cuda():
    out = run_probe("""
      const int l = threadIdx.x & 31;
      out[0 * 64 + threadIdx.x] = __shfl_down_sync(0xffffffffu, l * 10, 3);
      out[1 * 64 + threadIdx.x] = __shfl_up_sync(0xffffffffu, l * 10, 3);
      out[2 * 64 + threadIdx.x] = __shfl_xor_sync(0xffffffffu, l * 10, 5);
      out[3 * 64 + threadIdx.x] = __shfl_sync(0xffffffffu, l * 10, 7);
      out[4 * 64 + threadIdx.x] = (int)__ballot_sync(0xffffffffu, l % 3 == 0);
      out[5 * 64 + threadIdx.x] = (int)__reduce_min_sync(0xffffffffu, 40u - l + threadIdx.x / 32);
      __shared__ int total;
      if (threadIdx.x == 0) total = 0;
      __syncthreads();
      atomicAdd(&total, 1);
      __syncthreads();
      out[6 * 64 + threadIdx.x] = total;""", block=64)
    lane = np.arange(64) % 32
    assert (out[0] == np.where(lane + 3 < 32, lane + 3, lane) * 10).all()
    assert (out[1] == np.where(lane >= 3, lane - 3, lane) * 10).all()
    assert (out[2] == (lane ^ 5) * 10).all() and (out[3] == 70).all()
    assert (out[4].astype(np.uint32) == sum(1 << i for i in range(0, 32, 3))).all()
    assert (out[5] == 9 + np.arange(64) // 32).all() and (out[6] == 64).all()


def test_barrier_in_a_branch_is_a_named_deadlock():
    with pytest.raises(PuzzleLaunchError, match="deadlock.*\n.*threads 0-15 .*__syncthreads"):
        run_probe("if (threadIdx.x < 16) __syncthreads(); else __syncwarp();")


def test_crash_and_endless_loop_end_the_launch(monkeypatch):
    with pytest.raises(PuzzleLaunchError, match="crashed the CPU simulator"):
        run_probe("((volatile int*)0)[threadIdx.x] = 1;")
    monkeypatch.setattr(engine, "CPU_TIMEOUT_S", 1.0)
    with pytest.raises(PuzzleLaunchError, match="more than 1 s"):
        run_probe("volatile int spin = 1; while (spin) {}")


def test_compile_error_names_the_readers_line():
    result = check(PUZZLES[1], "__global__ void visible_tokens(\n  int x) { return 0 }",
                   quiet=True)
    assert "does not compile" in result.message and "your_code.cu:2" in result.message


def test_e4m3_rounding_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = np.r_[rng.standard_normal(20000) * np.exp2(rng.uniform(-14, 10, 20000)),
              np.arange(-500, 500, 0.25), [0.0, -0.0, 448, 449, 464, 465, 2.0 ** -10,
                                           1.5 * 2.0 ** -9, 0.5 * 2.0 ** -9]].astype(np.float32)
    y = np.zeros(len(x), np.uint8)
    kernel = Kernel("conv", (("const float*", "x"), ("unsigned char*", "y"), ("int", "n")))
    launch(kernel, "__global__ void conv(const float* x, unsigned char* y, int n) {\n"
           "  for (int i = threadIdx.x; i < n; i += 32) y[i] = pw_to_e4m3(x[i]);\n}",
           1, 32, [x, y, len(x)])
    want = torch.from_numpy(x).clamp(-448, 448).to(torch.float8_e4m3fn).view(torch.uint8)
    assert np.array_equal(y, want.numpy())


@pytest.mark.skipif(NVCC is None, reason="nvcc not found (set CUDA_HOME or put nvcc on PATH)")
@pytest.mark.parametrize("number", sorted(PUZZLES))
def test_gpu_text_compiles_for_sm90a(number, tmp_path):
    """What the GPU runs (harness, helpers on mbarriers, the reference solution) compiles."""
    source = tmp_path / f"puzzle{number}.cu"
    source.write_text(gpu_source(PUZZLES[number].kernel, reference_solution(number)))
    done = subprocess.run([NVCC, "-std=c++17", "-O3", "-arch=sm_90a", "-cubin",
                           f"-I{engine.CUDA_DIR}", "-o", str(tmp_path / "p.cubin"), str(source)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_chapters_start_from_the_shipped_starters():
    """Each puzzle's starter is in a puzzle chapter verbatim, and the chapters show no solution."""
    folder = Path(__file__).resolve().parents[2] / "notebooks"
    text = "".join("".join(c["source"]) for path in sorted(folder.glob("1[45]_puzzles_*.ipynb"))
                   for c in json.loads(path.read_text())["cells"])
    for number, puzzle in PUZZLES.items():
        assert f'SOURCE_{number} = r"""\n{puzzle.starter}"""' in text, number
        answer = [line.strip() for line in reference_solution(number).splitlines()
                  if len(line.strip()) > 40 and line.strip() not in puzzle.starter]
        assert answer and not [line for line in answer if line in text], number
