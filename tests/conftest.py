"""The one place that decides whether the GPU tests run, skip or fail.

A GPU test is every test under ``tests/gpu/`` (each gets the ``gpu`` marker) and any test
marked ``gpu``. Where the GPU path cannot run (:func:`pageweaver_edu.gpu.device.gpu_available`
is false) they are skipped with the reason; with ``PAGEWEAVER_REQUIRE_GPU=1`` (``make
gpu-test``) they fail instead, so a missing GPU or a broken PyCUDA cannot pass by skipping.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import Phase, settings

from pageweaver_edu.gpu.device import gpu_available, gpu_required_by_env, gpu_unavailable_reason

GPU_TESTS = Path(__file__).resolve().parent / "gpu"
# tools/mutation_check.py runs with --hypothesis-profile=mutation: a failing example is reported
# as found, not shrunk (shrinking a planted bug's example takes minutes on two cores)
settings.register_profile("mutation", phases=[Phase.explicit, Phase.reuse, Phase.generate])


def _is_gpu_test(item) -> bool:
    in_gpu_folder = GPU_TESTS in Path(str(item.path)).resolve().parents
    return in_gpu_folder or bool(item.get_closest_marker("gpu"))


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if _is_gpu_test(item)]
    for item in gpu_items:
        item.add_marker(pytest.mark.gpu)
    if not gpu_items or gpu_available():
        return
    if gpu_required_by_env():
        mark = pytest.mark.usefixtures("_gpu_required")
    else:
        mark = pytest.mark.skip(reason=f"GPU tests need a CUDA GPU and PyCUDA: "
                                       f"{gpu_unavailable_reason()}")
    for item in gpu_items:
        item.add_marker(mark)


@pytest.fixture
def _gpu_required():
    pytest.fail(f"PAGEWEAVER_REQUIRE_GPU=1 but the GPU path cannot run: {gpu_unavailable_reason()}")
