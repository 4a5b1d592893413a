"""The device choice (kepp_core/devices.py): ``--device cpu|cuda|cuda:N`` read and resolved in one place,
the distributed backend that follows it, and what is refused in one line before any work.

Where a test needs a machine that reports CUDA GPUs it SIMULATES one (``torch.cuda.is_available`` and
``device_count`` patched in this process, or ``tests/helpers/fake_cuda.py`` for a real `kepp` process and
for real ranks under torchrun): the decision is real, no tensor goes to a GPU. So these tests give the same
answers on a machine with a GPU and on one without."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from kepp_core.devices import check_device, distributed_backend, launcher_ranks, resolve_device, using, chosen
from kepp_core.errors import KeppError
from tests.helpers.app_env import REPO
from tests.helpers.cli import assert_one_line_error
from tests.helpers.fake_cuda import GPUS_ENV
from tests.helpers.training import tiny_world

FAKE_CUDA = REPO / "tests" / "helpers" / "fake_cuda.py"
NO_LAUNCHER = {"PYTHONPATH": str(REPO), "WORLD_SIZE": "", "RANK": "", "LOCAL_RANK": "", "LOCAL_WORLD_SIZE": "", "SLURM_NTASKS": "",
               "SLURM_LOCALID": "", "SLURM_NTASKS_PER_NODE": "", "KEPP_DEVICE": ""}


@pytest.fixture
def gpus(monkeypatch):
    """Simulate a machine whose torch reports ``n`` CUDA GPUs (0: none); no launcher, no $KEPP_DEVICE."""
    for name in NO_LAUNCHER:
        monkeypatch.delenv(name, raising=False)

    def pretend(n: int) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: n > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: n)
    return pretend


@pytest.mark.parametrize("words, device", [("cpu", "cpu"), ("cuda", "cuda"), ("cuda:1", "cuda:1"),
                                           ("cuda:0", "cuda:0"), ("cuda:007", "cuda:7")])
def test_device_words_are_read_into_one_spelling(words, device):
    assert check_device(words) == device


@pytest.mark.parametrize("words", ["gpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "cpu:0", " cuda", "cuda:1 ",
                                   "", "cuda:99999", "mps", "cuda,cpu"])
def test_bad_device_words_are_one_error_naming_the_option_and_what_is_expected(words):
    with pytest.raises(KeppError) as e:
        check_device(words, "--device")
    assert str(e.value) == f"--device {words!r}: expected cpu, cuda or cuda:N (N: a GPU's number)"


def test_the_cpu_is_the_cpu_and_the_default_is_the_gpu_where_there_is_one(gpus):
    gpus(0)
    assert resolve_device(None) == "cpu" and resolve_device("cpu") == "cpu"
    gpus(2)
    assert resolve_device(None) == "cuda:0" and resolve_device("cuda") == "cuda:0"
    assert resolve_device("cuda:1") == "cuda:1" and resolve_device("cpu") == "cpu"


def test_kepp_device_is_the_default_and_an_option_goes_before_it(gpus, monkeypatch):
    gpus(2)
    monkeypatch.setenv("KEPP_DEVICE", "cpu")
    assert resolve_device(None) == "cpu" and resolve_device("cuda:1") == "cuda:1"
    monkeypatch.setenv("KEPP_DEVICE", "gpu0")
    with pytest.raises(KeppError, match=r"^KEPP_DEVICE='gpu0': expected cpu, cuda or cuda:N"):
        resolve_device(None)


def test_cuda_without_cuda_is_one_line_naming_the_fix(gpus):
    gpus(0)
    messages = []
    for words in ("cuda", "cuda:0", "cuda:3"):
        with pytest.raises(KeppError) as e:
            resolve_device(words, "--device")
        messages.append(str(e.value))
    for words, message in zip(("cuda", "cuda:0", "cuda:3"), messages, strict=True):
        assert message.startswith(f"--device {words}: ") and message.endswith("run on the CPU with --device cpu")
        assert "\n" not in message
    assert len(messages) == 3


def test_a_gpu_beyond_those_there_are_is_refused_naming_them(gpus):
    gpus(2)
    with pytest.raises(KeppError) as e:
        resolve_device("cuda:2")
    assert str(e.value) == ("--device cuda:2: this machine has 2 CUDA GPUs (cuda:0 to cuda:1); name one of them, "
                            "or run on the CPU with --device cpu")


def test_ranks_take_their_local_gpu_and_share_gpus_only_where_allowed(gpus):
    gpus(2)
    ranks = {"WORLD_SIZE": "3", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "3"}
    assert launcher_ranks(ranks) == (2, 3, 3)
    two = {"WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    assert resolve_device("cuda", environ=two, one_per_rank=True) == resolve_device(None, environ=two) == "cuda:1"
    assert resolve_device(None, environ=ranks) == "cuda:0"  # inference: rank 2 shares GPU 0
    with pytest.raises(KeppError) as e:
        resolve_device(None, "--device", environ=ranks, one_per_rank=True)
    assert str(e.value) == ("--device cuda (the default where torch finds a GPU): 3 ranks on this machine but "
                            "2 CUDA GPUs, and NCCL needs a GPU per rank: start at most 2 (torchrun "
                            "--nproc-per-node 2), or run the ranks on the CPU with --device cpu")
    with pytest.raises(KeppError, match=r"--device cuda:1 puts all 3 ranks on this machine on one GPU"):
        resolve_device("cuda:1", environ=ranks, one_per_rank=True)
    assert resolve_device("cpu", environ=ranks, one_per_rank=True) == "cpu"
    assert launcher_ranks({"SLURM_NTASKS": "8", "SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "4(x2)"}) == (1, 4, 8)


def test_the_backend_follows_the_device():
    assert distributed_backend("cpu") == "gloo"
    assert distributed_backend("cuda:0") == distributed_backend("cuda:3") == "nccl"


def test_cpu_ranks_on_a_machine_that_reports_cuda_join_with_gloo_and_gpu_ranks_with_nccl(gpus, monkeypatch):
    """SIMULATED: torch reports 2 GPUs; ``init_process_group`` records the backend instead of meeting."""
    import torch.distributed as dist

    from kepp_core.training.loop import runtime

    gpus(2)
    joined, selected = [], []
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group", lambda backend, **kw: joined.append(backend))
    monkeypatch.setattr(dist, "get_rank", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: selected.append(str(d)))
    for name, value in {"WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(name, value)
    rt = runtime("cpu")
    assert (str(rt.device), rt.rank, rt.world, joined, selected) == ("cpu", 1, 2, ["gloo"], [])
    with using("cpu"):
        assert str(runtime().device) == "cpu" and joined[-1] == "gloo"
    rt = runtime()  # the default: the GPU of this rank
    assert (str(rt.device), joined[-1], selected) == ("cuda:1", "nccl", ["cuda:1"])


def test_a_command_chooses_its_device_for_its_run_only(gpus):
    gpus(1)
    assert chosen() == "cuda:0"
    with using("cpu") as device:
        assert device == "cpu" and chosen() == "cpu" and chosen("cuda") == "cuda:0"
    assert chosen() == "cuda:0"


def _fake(*args, gpus: int, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(FAKE_CUDA), *map(str, args)], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **NO_LAUNCHER, GPUS_ENV: str(gpus), "KEPP_THREADS": "1",
                                                **(env or {})})


@pytest.mark.parametrize("argv", [
    ["train", "step", "--out", "{tmp}/step"],
    ["eval", "--models", "{tmp}/models", "--out", "{tmp}/table.json"],
    ["plan", "{tmp}/v.mp4", "--start", "0", "1", "--goal", "2", "3", "--models", "{tmp}/models"],
    ["protocol", "{tmp}/spec.toml"],
    ["features", "extract", "--root", "{tmp}/world"],
    ["features", "encode", "{tmp}/v.mp4", "--out", "{tmp}/v.npy"],
    ["demo", "models", "--out", "{tmp}/demo"],
])
@pytest.mark.slow
def test_every_network_command_refuses_cuda_without_cuda_in_one_line_before_any_work(argv, tmp_path):
    """SIMULATED (a process whose torch finds no GPU): `kepp ... --device cuda:1` stops at once, naming the fix."""
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    r = _fake(*args, "--device", "cuda:1", gpus=0)
    assert_one_line_error(r, "--device cuda:1: ", "run on the CPU with --device cpu")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_app_refuses_a_device_there_is_not_and_carries_the_one_it_gets(tmp_path):
    from kepp_core.api import AppConfig
    from kepp_core.api.config import ENV

    r = _fake("app", "--device", "cuda:2", "--port", "1", gpus=2)
    assert_one_line_error(r, "--device cuda:2: this machine has 2 CUDA GPUs")
    config = tmp_path / "app.toml"
    config.write_text('device = "gpu"\n')
    r = _fake("app", "--config", config, gpus=0)
    assert_one_line_error(r, f"{config}: device 'gpu': expected cpu, cuda or cuda:N")
    env = AppConfig(device="cuda:1").environment()
    assert env[ENV["device"]] == "cuda:1" and AppConfig.from_env(env).device == "cuda:1"
    config.write_text('device = "cpu"\n')
    assert AppConfig.from_env({ENV["config"]: str(config)}).device == "cpu"


@pytest.mark.slow
def test_more_ranks_than_gpus_is_refused_by_every_rank_before_any_work(tmp_path):
    """SIMULATED GPUs, real ranks: torchrun starts two `kepp train step` processes on a machine whose torch
    reports one GPU; each stops with one line naming both fixes, before the dataset is read."""
    out = tmp_path / "ddp"
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                        str(FAKE_CUDA), "train", "step", "--dataset", "demo", "--root", tmp_path / "no-world",
                        "--out", out, "--no-progress"], cwd=REPO, capture_output=True, text=True, timeout=300,
                       env={**os.environ, **NO_LAUNCHER, GPUS_ENV: "1", "KEPP_THREADS": "1"})
    assert r.returncode != 0
    errors = [line for line in r.stderr.splitlines() if line.startswith("kepp: error:")]
    assert errors == ["kepp: error: --device cuda (the default where torch finds a GPU): 2 ranks on this machine "
                      "but 1 CUDA GPU, and NCCL needs a GPU per rank: start at most 1 (torchrun --nproc-per-node 1), "
                      "or run the ranks on the CPU with --device cpu"] * 2, r.stderr[-3000:]
    assert f'File "{REPO / "kepp_core"}' not in r.stderr and not out.exists()  # torchrun's own report aside


@pytest.mark.slow
def test_cpu_ranks_on_a_machine_that_reports_a_gpu_train_with_gloo(tmp_path):
    """SIMULATED GPU, real ranks and a real gloo group: `--device cpu` puts two torchrun ranks on the CPU of a
    machine whose torch reports one GPU (before, they took NCCL and cuda:LOCAL_RANK and died); they finish
    with identical weights."""
    world = tiny_world(tmp_path / "world")
    out = tmp_path / "ddp"
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                        str(FAKE_CUDA), "train", "step", "--dataset", "demo", "--root", world, "--out", out,
                        "--train-steps", "4", "--val-every", "4", "--log-every", "2", "--diffusion-steps", "5",
                        "--dim", "16", "--batch-size", "16", "--sampler", "ddim", "--sampler-steps", "2",
                        "--no-progress", "--device", "cpu"],
                       cwd=REPO, capture_output=True, text=True, timeout=300,
                       env={**os.environ, **NO_LAUNCHER, GPUS_ENV: "1", "KEPP_THREADS": "1", "OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    training = json.loads((out / "config.json").read_text())["training"]
    assert training["world_size"] == 2 and training["device"] == "cpu"
    assert len(set(training["rank_digests"])) == 1
