"""`kepp` in a process whose torch reports CUDA GPUs that are not there: a SIMULATION, for the tests of
the device choice on a machine without a GPU (and the same on one with a GPU). ``torch.cuda.is_available()``
answers ``$KEPP_FAKE_GPUS > 0`` and ``torch.cuda.device_count()`` answers ``$KEPP_FAKE_GPUS``; nothing
else of CUDA is faked, so a command that really placed a tensor on a GPU would fail. What these tests
show is the decision (:mod:`kepp_core.devices`): the backend and device a rank takes, what is refused.

    python tests/helpers/fake_cuda.py train step ...          # as `kepp train step ...`
    torchrun --nproc-per-node 2 tests/helpers/fake_cuda.py train step ...
"""

from __future__ import annotations

import os
import sys

GPUS_ENV = "KEPP_FAKE_GPUS"


def pretend_gpus(count: int) -> None:
    """Make this process's torch report ``count`` CUDA GPUs (0: none)."""
    import torch

    torch.cuda.is_available = lambda: count > 0
    torch.cuda.device_count = lambda: count
    torch.cuda.set_device = lambda device: None  # a rank names its GPU; there is none to select


if __name__ == "__main__":  # run with the checkout on PYTHONPATH, as tests/helpers/cli.py runs kepp
    pretend_gpus(int(os.environ.get(GPUS_ENV, "1")))
    from kepp_core.cli import main

    sys.exit(main(sys.argv[1:]))
