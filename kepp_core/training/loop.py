"""One training loop for every model: warm-up/step-decay schedule, JSONL metrics log,
validation with early stopping, atomic checkpoints, ``--resume`` and DDP.

Crash consistency of ``--resume``: the resume state is a tensors file named by its step
(``state-00000300.safetensors``) and ``state.json``, written last, which names it (and its
save id). A kill between the two leaves ``state.json`` naming the previous, complete state,
so a resumed run replays from there and ends with the same weights as an uninterrupted one.
Files a killed run left half-written are removed when the next run starts; a torn last line
of ``metrics.jsonl`` is dropped. The write points can be killed on purpose in tests
(``KEPP_FAULT_AT``, see :func:`kepp_core.io.fault_point`).

Distributed runs start with ``torchrun`` (``WORLD_SIZE`` > 1 in the environment); each
rank takes its share of every global batch; rank 0 writes logs and checkpoints. The same
command runs on one process without ``torchrun``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

import msgspec

import torch
from torch import nn
from tqdm import tqdm

from kepp_core.catalog import CONFIG_FILE, LOG_FILE, WEIGHTS_FILE
from kepp_core.devices import chosen, distributed_backend
from kepp_core.errors import KeppError
from kepp_core.io import (atomic_write_json, atomic_write_text, ensure_folder, fault_point, read_bytes, read_json,
                          remove_stale_temporaries, writer_lock)
from kepp_core.schema import Meta, Struct, decode_json
from kepp_core.models.checkpoint import load_tensors, new_save_id, save_checkpoint, save_tensors, tensors_id
from kepp_core.models.options import TrainConfig
from kepp_core.training.config import lr_at

STATE = "state.safetensors"  # the state tensors of runs written before state files were named by step
STATE_JSON = "state.json"
STATE_GLOB = "state-*.safetensors"


def state_file(step: int) -> str:
    return f"state-{step:08d}.safetensors"


# --- devices and processes ----------------------------------------------------------------
@dataclass
class Runtime:
    """Where this process trains: its device, its rank and the number of processes."""

    device: torch.device
    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0


def runtime(device: str | None = None) -> Runtime:
    """Where this process trains: ``device``, else the running command's
    (:func:`kepp_core.devices.chosen`: ``--device``, ``$KEPP_DEVICE``, the GPU where there is one);
    joins the process group when started by ``torchrun`` (``WORLD_SIZE`` > 1) with the backend of
    that device (NCCL for GPU ranks, gloo for CPU ranks). More ranks on a machine than GPUs is a
    KeppError before anything is trained (:func:`kepp_core.devices.resolve_device`)."""
    name = chosen(device, one_per_rank=True)
    dev = torch.device(name)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group(distributed_backend(name))
        return Runtime(dev, dist.get_rank(), world)
    return Runtime(dev)


@contextlib.contextmanager
def output_lock(out: str | Path | None) -> Iterator[None]:
    """Hold ``out``'s writer lock (:func:`kepp_core.io.writer_lock`) for the block: a second run
    into the same folder is refused (naming the holder's pid) instead of interleaving its logs and
    checkpoints. Only the writing rank of a distributed run takes it."""
    if out is None or not runtime().main:
        yield
        return
    with writer_lock(out, "training run"):
        yield


def holds_output_lock(train: Callable) -> Callable:
    """Run the trainer ``train`` (whose argument ``out`` is its output folder) under :func:`output_lock`."""
    signature = inspect.signature(train)

    @functools.wraps(train)
    def locked(*args, **kwargs):
        with output_lock(signature.bind_partial(*args, **kwargs).arguments.get("out")):
            return train(*args, **kwargs)

    return locked


# More intra-op threads than this only slows work down (and torch crashes on absurd counts).
THREADS_PER_CORE = 4


def most_threads() -> int:
    """The most intra-op threads a run may ask for on this machine."""
    return max(4, (os.cpu_count() or 2) * THREADS_PER_CORE)


def set_cpu_threads(n: int | None = None) -> int:
    """Intra-op threads for CPU work: ``n``, else ``$KEPP_THREADS``, else half the cores (at least 1).

    The demo's networks are small, so one thread per process is as fast as several and
    does not fight other processes on a shared machine.
    """
    cores, most = os.cpu_count() or 2, most_threads()
    if n is not None and not 1 <= n <= most:
        raise KeppError(f"threads {n}: expected 1 to {most} ({THREADS_PER_CORE} per core of this "
                        f"machine's {cores})")
    env = os.environ.get("KEPP_THREADS", "").strip()
    if n is None and env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if not 1 <= n <= most:
            raise KeppError(f"KEPP_THREADS={env[:40]!r}: expected a whole number of threads from 1 to {most}")
    n = n or max(1, cores // 2)
    torch.set_num_threads(n)
    return n


def weights_digest(model: nn.Module) -> str:
    """SHA-1 of the model's weights (ranks of one distributed run must agree on it)."""
    h = hashlib.sha1()
    for k, v in sorted(model.state_dict().items()):
        h.update(k.encode())
        h.update(v.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def peak_rss_mb() -> float | None:
    """The process's peak resident memory so far, in MB (None where the platform does not say)."""
    try:
        import resource  # Unix only: kept local so the package imports on Windows
    except ImportError:
        return None
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


# --- the loop -----------------------------------------------------------------------------
def fit(model: nn.Module, n_items: int, batch_loss: Callable[[nn.Module, torch.Tensor], torch.Tensor],
        cfg: TrainConfig, out: str | Path | None, meta: dict,
        validate: Callable[[nn.Module], dict] | None = None, resume: bool = False,
        progress: bool = True, rt: Runtime | None = None, extra: nn.Module | None = None) -> dict:
    """Train ``model`` for ``cfg.train_steps`` optimisation steps and return a summary.

    ``batch_loss(module, idx)`` returns the loss of the items ``idx`` (``module`` is the
    DDP-wrapped model in distributed runs, so it must call ``module(...)``). ``validate``
    returns a dict with a ``score`` (higher is better) and other metrics; the best
    validated weights are the checkpoint (the last weights when there is no validation).
    ``meta`` goes into the checkpoint config. ``extra``: a module trained alongside (e.g. a
    loss with a learnable scale): its parameters join the optimiser and the resume state,
    not the checkpoint.
    """
    rt = rt or runtime()
    out = Path(out) if out is not None else None
    model.to(rt.device)
    extra = extra.to(rt.device) if extra is not None else nn.Module()
    torch.manual_seed(cfg.seed * 7919 + rt.rank)
    opt = torch.optim.AdamW([*model.parameters(), *extra.parameters()], lr=cfg.lr, weight_decay=cfg.weight_decay)
    net: nn.Module = model
    if rt.world > 1:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model, device_ids=[rt.device.index] if rt.device.type == "cuda" else None)
    start, best, bad_rounds, history_best = _start_state(out, model, opt, cfg, rt, resume, extra)
    bsz = min(cfg.batch_size, n_items)
    per_epoch = max(1, n_items // bsz)
    t0 = time.time()
    running, count = 0.0, 0
    stopped_early = False
    bar = tqdm(range(start, cfg.train_steps), initial=start, total=cfg.train_steps,
               disable=not (progress and rt.main), desc=meta.get("kind", "train"), unit="step", leave=False)
    step = start
    for step in bar:
        model.train()
        epoch, i = divmod(step, per_epoch)
        perm = torch.randperm(n_items, generator=torch.Generator().manual_seed(cfg.seed * 1_000_003 + epoch))
        idx = perm[i * bsz:(i + 1) * bsz][rt.rank::rt.world]
        lr = lr_at(cfg, step)
        for g in opt.param_groups:
            g["lr"] = lr
        running += _optimise(model, net, opt, batch_loss, idx, step, lr)
        count += 1
        done = step + 1
        validating = validate is not None and (done % cfg.val_every == 0 or done == cfg.train_steps)
        if validating or done % cfg.log_every == 0 or done == cfg.train_steps:
            rec = {"step": done, "epoch": round(done / per_epoch, 3), "loss": running / count, "lr": lr,
                   "time": round(time.time() - t0, 3)}
            running, count = 0.0, 0
            bar.set_postfix(loss=f"{rec['loss']:.4f}")
            if validating:
                val = validate(model)
                rec["val"] = val
                if val["score"] > best:
                    best, bad_rounds, history_best = val["score"], 0, {"step": done, **val}
                    if out is not None and rt.main:
                        save_checkpoint(out, model, {**meta, "train_step": done, "val": val})
                else:
                    bad_rounds += 1
                if out is not None and rt.main:
                    _append_log(out, rec)
                    _save_state(out, model, opt, done, best, bad_rounds, history_best, cfg, extra, rt.device)
                if cfg.patience and bad_rounds >= cfg.patience:
                    stopped_early = True
                    break
            elif out is not None and rt.main:
                _append_log(out, rec)
    bar.close()
    final_step = step + 1 if cfg.train_steps > start else start
    digests = _gather_digests(model, rt)
    summary = {"steps": final_step, "stopped_early": stopped_early, "best": history_best,
               "seconds": round(time.time() - t0, 2), "peak_rss_mb": peak_rss_mb(),
               "world_size": rt.world, "device": str(rt.device),
               "rank_digests": digests}
    if out is not None and rt.main:
        _write_summary(out, model, meta, summary, final_step, validated=validate is not None)
    return summary


def _start_state(out: Path | None, model: nn.Module, opt, cfg: TrainConfig, rt: Runtime,
                 resume: bool, extra: nn.Module | None = None) -> tuple[int, float, int, dict | None]:
    """``(start step, best score, rounds without gain, best record)``: resumed from ``out``'s
    state, or fresh (a fresh run clears the folder's old log and states)."""
    if out is not None and rt.main:
        ensure_folder(out)
        remove_stale_temporaries(out)
    if resume:
        if out is None or not (out / STATE_JSON).is_file():
            raise KeppError(f"{out}: nothing to resume (no {STATE_JSON}; start without resuming)")
        return _load_state(out, model, opt, cfg, rt, extra)
    if out is not None and rt.main:
        for p in [out / LOG_FILE, out / STATE, out / STATE_JSON, *out.glob(STATE_GLOB)]:
            p.unlink(missing_ok=True)
    return 0, float("-inf"), 0, None


def _optimise(model: nn.Module, net: nn.Module, opt, batch_loss: Callable, idx: torch.Tensor,
              step: int, lr: float) -> float:
    """One optimisation step on the items ``idx``; returns the loss (refuses a non-finite one)."""
    loss = batch_loss(net, idx)
    if not torch.isfinite(loss.detach()).all():
        raise KeppError(f"training stopped at step {step + 1}: the loss is {float(loss.detach())} "
                        f"(learning rate {lr:g}); check the features for extreme values or lower the learning rate")
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return float(loss.detach())


def _write_summary(out: Path, model: nn.Module, meta: dict, summary: dict, final_step: int,
                   validated: bool) -> None:
    """The last weights when nothing was validated, then the run summary into the config."""
    if not validated:
        save_checkpoint(out, model, {**meta, "train_step": final_step})
    cfg_path = out / CONFIG_FILE
    if cfg_path.is_file():
        c = read_json(cfg_path, dict)
        c["training"] = summary
        atomic_write_json(cfg_path, c)


def _gather_digests(model: nn.Module, rt: Runtime) -> list[str]:
    d = weights_digest(model)
    if rt.world == 1:
        return [d]
    import torch.distributed as dist

    out: list = [None] * rt.world
    dist.all_gather_object(out, d)
    return out


def _append_log(out: Path, rec: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    line = json.dumps(rec) + "\n"
    try:
        with open(out / LOG_FILE, "a", encoding="utf-8") as f:
            # injected fault: a kill in the middle of the write leaves a torn last line
            fault_point("metrics-torn", lambda: (f.write(line[: len(line) // 2]), f.flush()))
            f.write(line)
            f.flush()
    except OSError as e:  # disk full, `ulimit -f`: name the log (a resumed run skips a torn last line)
        raise KeppError(f"{out / LOG_FILE}: cannot write ({e.strerror or e})") from None
    fault_point("metrics-line")


def _save_state(out: Path, model: nn.Module, opt: torch.optim.Optimizer, step: int, best: float,
                bad_rounds: int, history_best: dict | None, cfg: TrainConfig, extra: nn.Module | None = None,
                device: torch.device = torch.device("cpu")) -> None:
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    if extra is not None:
        tensors.update({f"extra.{k}": v for k, v in extra.state_dict().items()})
    sd = opt.state_dict()
    for pid, st in sd["state"].items():
        for name, v in st.items():
            tensors[f"optim.{pid}.{name}"] = v if torch.is_tensor(v) else torch.tensor(v)
    tensors["rng.cpu"] = torch.get_rng_state()
    if device.type == "cuda":  # the generator of the GPU this run trains on
        tensors["rng.cuda"] = torch.cuda.get_rng_state(device)
    save_id = new_save_id()
    save_tensors(out / state_file(step), tensors, save_id)
    fault_point("state-tensors")
    # state.json is the commit point: until it is replaced, it names the previous complete state
    atomic_write_json(out / STATE_JSON, {"step": step, "best": best if best > float("-inf") else None,
                                         "bad_rounds": bad_rounds, "best_record": history_best,
                                         "param_groups": sd["param_groups"], "train": cfg.to_dict(),
                                         "tensors": state_file(step), "tensors_id": save_id})
    fault_point("state-json")
    _remove_unreferenced_states(out, state_file(step))


def _remove_unreferenced_states(out: Path, keep: str) -> None:
    for p in [out / STATE, *out.glob(STATE_GLOB)]:
        if p.name != keep:
            p.unlink(missing_ok=True)


class ResumeState(Struct):
    """The schema of ``state.json``: the commit point of a resume state (see the module docstring)."""

    HINTS: ClassVar[dict[str, str]] = {"step": "the optimisation steps done", "param_groups": "the optimiser's groups",
                                       "tensors": "the state's tensors file (state-<step>.safetensors)"}
    step: Annotated[int, Meta(ge=0, le=2**40)]
    param_groups: list[dict[str, Any]]
    best: float | None = None
    bad_rounds: Annotated[int, Meta(ge=0, le=2**40)] = 0
    best_record: dict[str, Any] | None = None
    tensors: Annotated[str, Meta(pattern=r"^state(-[0-9]{8})?\.safetensors$")] | None = None
    tensors_id: Annotated[str, Meta(max_length=64)] | None = None
    train: dict[str, Any] | None = None


def _load_state(out: Path, model: nn.Module, opt: torch.optim.Optimizer, cfg: TrainConfig,
                rt: Runtime, extra: nn.Module | None = None) -> tuple[int, float, int, dict | None]:
    where = str(out / STATE_JSON)
    state_json = decode_json(read_bytes(out / STATE_JSON, 2**24), ResumeState, where, lines=True)
    if state_json.step > cfg.train_steps:
        raise KeppError(f"{where}: resume state at step {state_json.step:,}, beyond the run's {cfg.train_steps:,} "
                        f"training steps (not this run's state); train again without resuming")
    if len(state_json.param_groups) != len(opt.param_groups):
        raise KeppError(f"{where}: 'param_groups' has {len(state_json.param_groups)} groups, the optimiser "
                        f"{len(opt.param_groups)} (not this run's state); train again without resuming")
    st = msgspec.structs.asdict(state_json)
    path = out / (st["tensors"] or STATE)
    if st.get("tensors_id") is not None and tensors_id(path) != st["tensors_id"]:
        raise KeppError(f"{path}: does not belong to {STATE_JSON} (different save ids); train again "
                        f"without resuming")
    if rt.main:
        _remove_unreferenced_states(out, path.name)  # a newer state whose state.json was never written
    tensors = load_tensors(path)
    try:
        model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
    except RuntimeError as e:
        raise KeppError(f"{out / STATE}: resume state does not match this model ({str(e).splitlines()[0]})") from None
    if extra is not None and any(k.startswith("extra.") for k in tensors):
        extra.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("extra.")})
    state: dict = {}
    for k, v in tensors.items():
        if k.startswith("optim."):
            _, pid, name = k.split(".", 2)
            state.setdefault(int(pid), {})[name] = v.to(rt.device) if name != "step" else v
    try:
        opt.load_state_dict({"state": state, "param_groups": st["param_groups"]})
    except (ValueError, KeyError, TypeError, RuntimeError) as e:
        raise KeppError(f"{where}: the optimiser state does not fit this run ({type(e).__name__}); train again "
                        f"without resuming") from None
    if "rng.cpu" in tensors:
        torch.set_rng_state(tensors["rng.cpu"])
        if rt.rank:
            torch.manual_seed(cfg.seed * 7919 + rt.rank + st["step"])
    if "rng.cuda" in tensors and rt.device.type == "cuda":
        torch.cuda.set_rng_state(tensors["rng.cuda"], rt.device)
    # Drop log lines written after the saved state (a killed run may have logged further).
    log = out / LOG_FILE
    if log.is_file() and rt.main:
        keep = [ln for ln in _log_lines(log) if json.loads(ln).get("step", 0) <= st["step"]]
        atomic_write_text(log, "".join(ln + "\n" for ln in keep))
    best = st["best"] if st["best"] is not None else float("-inf")
    return int(st["step"]), best, int(st["bad_rounds"]), st.get("best_record")


def _log_lines(log: Path) -> list[str]:
    """The complete lines of a metrics log; a torn last line (a kill mid-write) is dropped,
    a bad line elsewhere is a KeppError naming it."""
    lines = log.read_bytes().decode("utf-8", errors="replace").splitlines()
    out = []
    for k, ln in enumerate(lines):
        if not ln.strip():
            continue
        try:
            rec = json.loads(ln)
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
        except ValueError as e:
            if k == len(lines) - 1:
                break  # torn by a kill: the state it belonged to was not saved either
            raise KeppError(f"{log}:{k + 1}: corrupt metrics line ({e})") from None
        out.append(ln)
    return out


__all__ = ["Runtime", "fit", "holds_output_lock", "output_lock", "runtime", "set_cpu_threads", "weights_digest"]
