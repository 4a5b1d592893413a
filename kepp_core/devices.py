"""The device a network runs on, decided here and nowhere else.

Every command that runs a network takes ``--device cpu|cuda|cuda:N`` (the app: ``device`` in its
configuration; an S3D encoder spec: ``,device=``); left out, the device is ``$KEPP_DEVICE``, else
the GPU where there is one, else the CPU. :func:`check_device` reads the words (no torch: ``kepp
--help`` and the app's configuration stay light); :func:`resolve_device` turns them into the device
of this process, refusing in one line, before any work, what cannot run:

- ``cuda`` or ``cuda:N`` where torch finds no CUDA GPU (the fix: ``--device cpu``);
- ``cuda:N`` beyond the GPUs there are;
- under a launcher (``torchrun``: ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``) with
  ``one_per_rank`` (training: NCCL needs a GPU of its own for every rank), more ranks on this
  machine than GPUs, or every rank on the one GPU ``cuda:N`` names. Without it (inference, feature
  extraction) rank ``k`` takes GPU ``k mod GPUs``, so ranks may share a GPU.

The distributed backend follows the device (:func:`distributed_backend`): NCCL for GPU ranks, gloo
for CPU ranks, also on a machine that has GPUs.

A command chooses its device for the length of its run with :func:`using` (``kepp`` does, from
``--device``, like ``--threads`` sets the CPU threads); code that places a network without being
told where asks :func:`chosen` (which also resolves a device it is given, so that every
``device=`` argument of the package goes through :func:`resolve_device`).

>>> check_device("cuda:01"), check_device("cpu")
('cuda:1', 'cpu')
>>> distributed_backend("cuda:0"), distributed_backend("cpu")
('nccl', 'gloo')
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping

from kepp_core.errors import KeppError

DEVICE_ENV = "KEPP_DEVICE"  # the default device of every command, where --device is not given
EXPECTED = "cpu, cuda or cuda:N (N: a GPU's number)"
MAX_INDEX = 1023
_SYNTAX = re.compile(r"^(cpu|cuda)(?::([0-9]{1,4}))?$")
_chosen: str | None = None  # the device of the running command (using()); None: the default


def check_device(text: object, where: str = "--device") -> str:
    """``text`` as a device name (``cpu``, ``cuda``, ``cuda:N``, N without leading zeros), or a
    KeppError naming ``where`` and what was expected. Nothing is asked of torch.

    >>> check_device("gpu")
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: --device 'gpu': expected cpu, cuda or cuda:N (N: a GPU's number)
    """
    m = _SYNTAX.match(text) if isinstance(text, str) else None
    if m is None or (m.group(1) == "cpu" and m.group(2) is not None) or int(m.group(2) or 0) > MAX_INDEX:
        shown = repr(text[:40]) if isinstance(text, str) else type(text).__name__
        raise KeppError(f"{_named(where, shown)}: expected {EXPECTED}")
    return m.group(1) if m.group(2) is None else f"cuda:{int(m.group(2))}"


def launcher_ranks(environ: Mapping[str, str] | None = None) -> tuple[int, int, int]:
    """``(local rank, ranks on this machine, ranks in all)`` as a launcher sets them (``torchrun``:
    ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``WORLD_SIZE``; plain ``srun``: ``SLURM_LOCALID``,
    ``SLURM_NTASKS_PER_NODE``, ``SLURM_NTASKS``); ``(0, 1, 1)`` without one.

    >>> launcher_ranks({"WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"})
    (1, 2, 4)
    """
    env = os.environ if environ is None else environ

    def number(*names: str, default: int) -> int:
        for name in names:
            value = env.get(name, "").strip().split("(")[0]  # SLURM_NTASKS_PER_NODE may read "2(x3)"
            if value:
                if not value.isdigit():
                    raise KeppError(f"{name}={value[:40]!r}: expected a whole number (set by the launcher)")
                return int(value)
        return default

    world = max(1, number("WORLD_SIZE", "SLURM_NTASKS", default=1))
    local = number("LOCAL_RANK", "SLURM_LOCALID", default=0)
    local_world = number("LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE", default=min(world, local + 1))
    return local, max(local_world, local + 1), world


def resolve_device(text: str | None = None, where: str = "--device", *, one_per_rank: bool = False,
                   environ: Mapping[str, str] | None = None) -> str:
    """The device of this process for ``text`` (None: ``$KEPP_DEVICE``, else the GPU where there is
    one): ``cpu`` or ``cuda:N`` (module docstring); a KeppError of one line naming the fix otherwise."""
    env = os.environ if environ is None else environ
    if text is None and env.get(DEVICE_ENV, "").strip():
        text, where = env[DEVICE_ENV].strip(), DEVICE_ENV
    name = check_device(text, where) if text is not None else None
    if name == "cpu":
        return "cpu"
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if name is None and count == 0:
        return "cpu"
    shown = _named(where, name) if name else f"{_named(where, 'cuda')} (the default where torch finds a GPU)"
    if count == 0:
        why = "this torch is built without CUDA" if torch.version.cuda is None else "torch finds no CUDA GPU here"
        raise KeppError(f"{shown}: {why}; run on the CPU with --device cpu")
    local, local_world, _world = launcher_ranks(env)
    gpus = f"{count} CUDA GPU{'s' if count > 1 else ''}"
    if name not in (None, "cuda"):
        index = int(name.split(":")[1])
        if index >= count:
            raise KeppError(f"{shown}: this machine has {gpus} (cuda:0 to cuda:{count - 1}); "
                            f"name one of them, or run on the CPU with --device cpu")
        if one_per_rank and local_world > 1:
            raise KeppError(f"{shown} puts all {local_world} ranks on this machine on one GPU, but NCCL needs a GPU "
                            f"per rank: use --device cuda (rank k on GPU k), or run the ranks on the CPU with --device cpu")
        return name
    if one_per_rank and local_world > count:
        raise KeppError(f"{shown}: {local_world} ranks on this machine but {gpus}, and NCCL needs a GPU per "
                        f"rank: start at most {count} (torchrun --nproc-per-node {count}), or run the ranks on "
                        f"the CPU with --device cpu")
    return f"cuda:{local % count}"


def _named(where: str, value: str) -> str:
    """``--device cuda`` for an option, ``KEPP_DEVICE=cuda`` for an environment variable, ``...device=cuda``
    where ``where`` ends with ``=`` (an encoder spec's option)."""
    if where.endswith("="):
        return f"{where}{value}"
    return f"{where}={value}" if where.isupper() else f"{where} {value}"


def distributed_backend(device: str) -> str:
    """The ``torch.distributed`` backend of ranks on ``device``: NCCL on GPUs, gloo on the CPU."""
    return "nccl" if str(device).startswith("cuda") else "gloo"


@contextlib.contextmanager
def using(text: str | None, where: str = "--device", *, one_per_rank: bool = False) -> Iterator[str]:
    """Resolve ``text`` (:func:`resolve_device`) and make it the device :func:`chosen` gives for the
    block (the block of one command); the previous choice is restored after it."""
    global _chosen
    device = resolve_device(text, where, one_per_rank=one_per_rank)
    previous, _chosen = _chosen, device
    try:
        yield device
    finally:
        _chosen = previous


def chosen(device: str | None = None, where: str = "device", *, one_per_rank: bool = False) -> str:
    """Where to place a network: ``device`` where one is given (resolved, ``where`` naming it in an
    error), else the running command's choice (:func:`using`), else the default (:func:`resolve_device`)."""
    if device is not None:
        return resolve_device(device, where, one_per_rank=one_per_rank)
    return _chosen if _chosen is not None else resolve_device(None, one_per_rank=one_per_rank)


__all__ = ["DEVICE_ENV", "check_device", "chosen", "distributed_backend", "launcher_ranks", "resolve_device",
           "using"]
