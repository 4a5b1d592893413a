"""Every format one schema, every failure one line, through the real command line: malformed
networkx reconstruction pickles in ``graph import``, a TorchScript encoder whose forward raises
(named, with the first line of its error), integers typed with thousands of digits, a CUDA device
on a machine without one (the fix named), a FIFO where a checkpoint should be."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.s3d import write_release

ENV = {"KEPP_THREADS": "1", "OMP_NUM_THREADS": "1"}


def _global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


DIGRAPH = _global("networkx.classes.digraph", "DiGraph")
# Pickles that call the allowed networkx globals with what networkx refuses (NetworkXError, a traceback before)
RECONSTRUCTIONS = {
    "digraph-of-a-bad-edge-list": b"\x80\x02" + DIGRAPH + b"(K\x01K\x02K\x03t\x85R.",
    "digraph-of-a-dict-of-numbers": b"\x80\x02" + DIGRAPH + b"(}(K\x01K\x02ut\x85R.",
    "reconstructor-with-the-graph-as-its-base": (b"\x80\x02" + _global("copyreg", "_reconstructor") + b"(" + DIGRAPH
                                                 + DIGRAPH + b"(K\x01K\x02K\x03ttR."),
    "degree-view-of-a-node-not-in-the-graph": (b"\x80\x02" + _global("networkx.classes.reportviews", "DiDegreeView")
                                               + b"(" + DIGRAPH + b")RK\x07tR."),
}


@pytest.mark.parametrize("case", sorted(RECONSTRUCTIONS))
def test_a_malformed_networkx_reconstruction_pickle_is_one_line(case, tmp_path):
    p = tmp_path / f"{case}.pkl"
    p.write_bytes(RECONSTRUCTIONS[case])
    r = run_kepp("graph", "import", p, "--out", tmp_path / "g.json")
    assert_one_line_error(r, str(p), "not a readable pickle of a networkx DiGraph", "NetworkXError")
    assert not (tmp_path / "g.json").exists()


SCRIPT = '''
import torch
class Raises(torch.nn.Module):
    def forward(self, frames: torch.Tensor, fps: float) -> torch.Tensor:
        if fps > 0:
            raise RuntimeError("the encoder cannot read frames of this size")
        return frames.float()
class Returns(torch.nn.Module):
    def forward(self, frames: torch.Tensor, fps: float):
        return [frames.float()]
torch.jit.save(torch.jit.script(Raises()), "raises.pt")
torch.jit.save(torch.jit.script(Returns()), "returns.pt")
'''


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("scripted")
    (folder / "make.py").write_text(SCRIPT)  # TorchScript compiles from source files
    subprocess.run([sys.executable, "make.py"], cwd=folder, check=True, capture_output=True)
    return folder


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    from kepp_core.video import write_video

    return write_video(tmp_path_factory.mktemp("video") / "a.mp4", np.full((24, 48, 64, 3), 90, np.uint8), 24)


@pytest.mark.parametrize("name, words", [
    ("raises.pt", ["its forward failed", "RuntimeError: the encoder cannot read frames of this size"]),
    ("returns.pt", ["its forward returned a list", "expected a tensor"]),
])
def test_a_torchscript_encoder_whose_forward_fails_is_named_with_its_error(name, words, scripted, video, tmp_path):
    r = run_kepp("features", "encode", video, "--out", tmp_path / "o.npy", "--encoder", scripted / name, env=ENV)
    assert_one_line_error(r, f"TorchScript encoder {scripted / name}", *words)
    assert not (tmp_path / "o.npy").exists()


@pytest.mark.parametrize("start", ["9" * 5000, "1" + "0" * 30], ids=["5000-digits", "31-digits"])
def test_an_action_index_of_thousands_of_digits_is_out_of_range(start, tmp_path):
    r = run_kepp("graph", "paths", "--start", start, "--goal", "0", "-T", 3)
    assert_one_line_error(r, "action index", f"({len(start):,} digits)", "out of range")


def test_an_index_in_other_digits_is_a_name_not_a_number():
    r = run_kepp("graph", "paths", "--start", "²", "--goal", "0", "-T", 3)
    assert_one_line_error(r, "unknown action '²'")


@pytest.mark.skipif(torch.cuda.is_available(), reason="the machine has a CUDA device")
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_a_cuda_device_on_a_machine_without_one_names_the_fix(device, tmp_path, video):
    release = write_release(tmp_path / "s3d", ["crack", "egg"])
    r = run_kepp("features", "encode", video, "--out", tmp_path / "o.npy", "--encoder",
                 f"s3d:{release},device={device}", env=ENV)
    assert_one_line_error(r, f"device={device}", "without CUDA", "run on the CPU with --device cpu")
    r = run_kepp("features", "ground", video, "--encoder", f"s3d:{release},device={device}", "--steps", "crack egg",
                 env=ENV)
    assert_one_line_error(r, f"device={device}", "without CUDA", "run on the CPU with --device cpu")
