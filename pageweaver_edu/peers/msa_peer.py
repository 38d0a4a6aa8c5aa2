"""``flashinfer.msa_ops.msa_sparse_attention`` run on our inputs (the GPU side of :mod:`.msa`):
its default route (the CuTe DSL union schedule for >= 8192 queries per sequence, else the Cake
generated programs) or the programs forced (:func:`msa_programs_route`), and a probe that says
which body ran (:func:`msa_route_probe`).
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..core.inputs import PageWeaverInputError
from .fp8_cache import interleaved_fp8_cache
from .msa import MsaInputs, msa_kwargs
from .selection import GROUP


@contextlib.contextmanager
def msa_programs_route():
    """Force MSA's Cake generated-program route on SM90 (``_sm90_dispatch`` prefers the CuTe
    DSL union route for >= 8192 queries per sequence; this makes that test say no)."""
    from flashinfer.msa_ops import _sm90_dispatch as disp

    saved = disp._cute_prefill_preferred
    disp._cute_prefill_preferred = lambda *a, **kw: False
    try:
        yield
    finally:
        disp._cute_prefill_preferred = saved


@contextlib.contextmanager
def msa_route_probe():
    """Record which SM90 MSA body runs inside the block: yields a list that receives
    ``"cake_programs"``, ``"cute_dsl_union"`` or ``"cute_dsl_single"`` per call."""
    import importlib

    seen: list = []
    targets = [("flashinfer.msa_ops.cake_hopper_sm90", "hopper_msa_sparse_attention",
                "cake_programs"),
               ("flashinfer.msa_ops.cute_dsl.sparse_prefill_sm90", "run", "cute_dsl_union"),
               ("flashinfer.msa_ops.cute_dsl.sparse_prefill_single_sm90", "run",
                "cute_dsl_single")]
    saved = []
    for mod_name, attr, label in targets:
        try:
            mod = importlib.import_module(mod_name)
        except Exception:  # noqa: BLE001 - the DSL may be absent: that route cannot run
            continue
        fn = getattr(mod, attr)

        def wrapped(*a, _fn=fn, _label=label, **kw):
            seen.append(_label)
            return _fn(*a, **kw)

        setattr(mod, attr, wrapped)
        saved.append((mod, attr, fn))
    try:
        yield seen
    finally:
        for mod, attr, fn in saved:
            setattr(mod, attr, fn)


class MsaPeer:
    """``flashinfer.msa_ops.msa_sparse_attention`` on our inputs (SM90, FP8 KV).

    Parameters
    ----------
    q : torch.Tensor, bf16 ``[N, H*16, 128]`` on the GPU
    kv : Fp8KV with per-tensor scales (:func:`~.fp8_cache.quantize_kv_per_tensor`)
    inputs : MsaInputs
    route : ``"default"`` (FlashInfer's choice) or ``"programs"`` (the Cake programs forced)
    """

    def __init__(self, q, kv, inputs: MsaInputs, route: str = "default"):
        import torch

        if route not in ("default", "programs"):
            raise PageWeaverInputError(f"route must be 'default' or 'programs', got {route!r}")
        self.cache, k8, v8 = interleaved_fp8_cache(kv)
        self.out = torch.empty_like(q)
        self.kw = msa_kwargs(q.contiguous(), k8, v8, inputs, float(kv.k_scale[0]),
                             float(kv.v_scale[0]), out=self.out)
        self.route = route
        emp = torch.from_numpy(np.repeat(inputs.empty, GROUP, axis=1)).to(q.device)
        self.empty = emp if bool(emp.any()) else None

    def _call(self):
        from flashinfer.msa_ops import msa_sparse_attention

        out = msa_sparse_attention(**self.kw)
        if self.empty is not None:
            out[self.empty] = 0
        return out

    def run(self):
        """One call (``out`` preallocated); returns ``[N, H*16, 128]`` bf16."""
        if self.route == "programs":
            with msa_programs_route():
                return self._call()
        return self._call()

    def probe(self) -> tuple[object, str]:
        """Run once while recording the route; returns (output, route name)."""
        with msa_route_probe() as seen:
            out = self.run()
        return out, "+".join(dict.fromkeys(seen)) or "unknown"
