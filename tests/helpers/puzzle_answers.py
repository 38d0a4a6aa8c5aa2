"""Plausible wrong answers to the kernel puzzles, each with what the check must say about it.

Each is the reference solution with one mistake a reader makes (written as the exact text it
replaces), so every wrong answer compiles and runs; the check must reject it with a message
holding ``expect`` (``expect_gpu`` where a real GPU's timing can show the same mistake another
way: a wait that gave up instead of the simulator's deadlock report, or the same hazard seen
first by another CTA).
"""

from __future__ import annotations

from dataclasses import dataclass

from pageweaver_edu.puzzles import reference_solution


@dataclass(frozen=True)
class WrongAnswer:
    puzzle: int
    name: str
    old: str
    new: str
    expect: str
    expect_gpu: tuple[str, ...] = ()

    def source(self) -> str:
        text = reference_solution(self.puzzle)
        assert text.count(self.old) == 1, f"{self.name}: {self.old!r} not once in the solution"
        return text.replace(self.old, self.new)

    def expected(self, device: str) -> tuple[str, ...]:
        return (self.expect, *self.expect_gpu) if device == "gpu" else (self.expect,)


WRONG_ANSWERS = (
    WrongAnswer(1, "duplicates-count-twice",
                "for (int f = 0; f < e; ++f) first = first && row[f] != page;", "",
                "was already selected by an earlier entry"),
    WrongAnswer(1, "causal-off-by-one", "causal_pos[i] + 1", "causal_pos[i]", "is in A_i"),
    WrongAnswer(1, "no-length-mask", "min(lengths[i], causal_pos[i] + 1)", "causal_pos[i] + 1",
                ">= L_i"),
    WrongAnswer(2, "interleaved-words", "if (p >= 0 && (p >> 5) == w) word |= 1u << (p & 31);",
                "if (p >= 0 && p % PW_WORDS == w) word |= 1u << (p / PW_WORDS);",
                "bitmap word"),
    WrongAnswer(2, "popcount-without-and-not", "__popc(word & ~u[w])", "__popc(word)",
                "expected popcount(b & ~u)"),
    WrongAnswer(2, "and-not-reversed", "__popc(word & ~u[w])", "__popc(~word & u[w])",
                "expected popcount(b & ~u)"),
    WrongAnswer(2, "lanes-past-the-window-go-on", "  if (j >= n) return;\n", "",
                "lanes j >= n own no query"),
    WrongAnswer(3, "shuffle-down-only-lane-0",
                "__shfl_xor_sync(0xffffffffu, key, offset)",
                "__shfl_down_sync(0xffffffffu, key, offset)", "every lane must hold the winner"),
    WrongAnswer(3, "ties-to-the-largest-id",
                "(static_cast<unsigned>(delta) << 8) | (threadIdx.x & 31u)",
                "(static_cast<unsigned>(delta) << 8) | (31u - (threadIdx.x & 31u))",
                "ties to the smallest id"),
    WrongAnswer(3, "assigned-queries-compete", "unsigned key = alive ?", "unsigned key = true ?",
                "not a candidate"),
    WrongAnswer(4, "inclusive-offsets", "int pos = incl - c;", "int pos = incl;", "pages["),
    WrongAnswer(4, "membership-bits-reversed", "mask |= ((m[r] >> bit) & 1u) << r;",
                "mask |= ((m[r] >> bit) & 1u) << (7 - r);", "membership byte"),
    WrongAnswer(4, "count-from-lane-0", "if (w == 31) *count = incl;",
                "if (w == 0) *count = incl;", "*count ="),
    WrongAnswer(5, "consumer-parity-flipped", "wait_full(r, n, s, (n / PW_SLOTS) & 1);",
                "wait_full(r, n, s, (n / PW_SLOTS + 1) & 1);", "hazard: CTA 0, stage 0",
                ("never completed", "stage 0 (slot 0): read before it landed")),
    WrongAnswer(5, "loader-never-waits", "if (n >= PW_SLOTS) wait_empty", "if (n < 0) wait_empty",
                "hazard", ("never completed",)),
    WrongAnswer(5, "loader-waits-on-a-fresh-phase",
                "if (n >= PW_SLOTS) wait_empty(r, n, s, (n / PW_SLOTS - 1) & 1);",
                "wait_empty(r, n, s, 0);",
                "wait on empty[0] for parity 0", ("never completed",)),
    WrongAnswer(5, "consumer-waits-only-in-the-first-round",
                "    wait_full(r, n, s, (n / PW_SLOTS) & 1);",
                "    if (n < PW_SLOTS) wait_full(r, n, s, (n / PW_SLOTS) & 1);",
                "read before it landed", ("never completed",)),
    WrongAnswer(5, "release-before-read",
                "    consume_stage(r, n, s);\n    release(r, n, s);",
                "    release(r, n, s);\n    consume_stage(r, n, s);",
                "read after this CTA released it", ("never completed",)),
    WrongAnswer(6, "no-rescale", "o = o * alpha + pv;", "o = o + pv;", "O["),
    WrongAnswer(6, "nan-on-a-masked-page", "if (m_new == -INFINITY) return;", "", "nan"),
    WrongAnswer(6, "natural-exp", "const float p = exp2f(x - m_new);",
                "const float p = expf(x - m_new);", "O["),
    WrongAnswer(7, "signed-amax", "float amax = fabsf(x);", "float amax = x;",
                "expected amax / 448"),
    WrongAnswer(7, "p-without-shift", "pw_to_e4m3(p * 256.f)", "pw_to_e4m3(p)",
                "e4m3(p * 2^8)"),
    WrongAnswer(7, "scale-inverted", "*scale = amax / 448.f", "*scale = 448.f / amax",
                "expected amax / 448"),
    WrongAnswer(8, "output-to-the-slot-row", "out[i * 32 + lane] =", "out[r * 32 + lane] =",
                "row "),
    WrongAnswer(8, "membership-ignored", "if (!((masks[x] >> r) & 1u)) continue;", "", "O["),
    WrongAnswer(8, "no-length-mask", "token < limits[i] ?", "true ?", "O["),
    WrongAnswer(8, "warps-past-the-group-go-on", "  if (r >= size) return;", "",
                "warps r >= size have no query"),
    WrongAnswer(9, "skip-without-waiting",
                "    wait_full(r, n, s, (n / PW_SLOTS) & 1);\n"
                "    if (needs_stage(r, n)) consume_stage(r, n, s);",
                "    if (needs_stage(r, n)) {\n"
                "      wait_full(r, n, s, (n / PW_SLOTS) & 1);\n"
                "      consume_stage(r, n, s);\n    }",
                "released before it landed", ("never completed",)),
    WrongAnswer(9, "skip-without-release", "    release(r, n, s);\n",
                "    if (needs_stage(r, n)) release(r, n, s);\n", "deadlock",
                ("never completed",)),
    WrongAnswer(9, "reads-every-stage", "if (needs_stage(r, n)) consume_stage(r, n, s);",
                "consume_stage(r, n, s);", "which it does not need"),
)
