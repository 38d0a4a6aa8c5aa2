"""Whether FlashInfer is there: :func:`flashinfer_available` imports it and says why not.

FlashInfer is an optional peer (the ``[peers]`` extra, or the offline bundle of
``tools/fill_peers.sh``); nothing else in :mod:`pageweaver_edu.peers` imports it at module level.
"""

from __future__ import annotations


def flashinfer_available() -> tuple[bool, str]:
    """(True, version) when ``import flashinfer`` works, else (False, the one-line reason)."""
    try:
        import flashinfer
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return False, f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    return True, str(getattr(flashinfer, "__version__", "unknown"))
