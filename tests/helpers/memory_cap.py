"""The memory cap of the tests that run the readers on hostile files in a child process.

The cap is RLIMIT_DATA: the heap and every private writable mapping, which is where a file
that inflates, or an array sized from a header, would put its bytes. Not RLIMIT_AS: a CUDA
build of torch reserves address space at import for libraries it never touches, so an
address-space cap that bounds the readers would stop ``import torch`` on a GPU machine.
"""

from __future__ import annotations

import resource

CAP_DATA = 3 << 30  # bytes


def cap_data() -> None:
    """``preexec_fn`` of the child: at most :data:`CAP_DATA` bytes of data."""
    resource.setrlimit(resource.RLIMIT_DATA, (CAP_DATA, CAP_DATA))
