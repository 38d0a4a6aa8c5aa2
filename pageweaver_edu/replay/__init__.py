"""CPU replays of what the kernels do, step by step, to check them and to show them.

* :mod:`.regroup_cta` — one regroup CTA of the paper's GPU form, thread by thread;
* :mod:`.regroup_pairs` — the pair-mask form of the default regroup kernel;
* :mod:`.pipeline` — the two-CTA ready / free slot protocol of Figure 3 as discrete events;
* :mod:`.union8` — the Union8 kernel's BF16 arithmetic for one group;
* :mod:`.fp8` and :mod:`.fp8_budget` — the FP8 Union8 arithmetic and its error per stage;
* :mod:`.baselines` — the gather and FlexAttention baselines the kernels are timed against;
* :mod:`.regroup_cost` — the regroup's cost model (word operations, serial rounds).
"""
