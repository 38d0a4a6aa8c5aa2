"""Greedy regroup (Algorithm 1) and its alternatives: π, the order in which queries execute.

:mod:`.sets` is the readable set-based definition, :mod:`.bitmap` the same result vectorized
over every window, :mod:`.variants` the alternatives the paper leaves open and
:mod:`.optimal` the exact optimum of tiny windows.
"""

from .bitmap import greedy_regroup
from .sets import greedy_regroup_sets

__all__ = ["greedy_regroup", "greedy_regroup_sets"]
