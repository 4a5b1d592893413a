"""Sizes are checked before anything is allocated, wherever a size comes from a file or an option:
each case below used to allocate gigabytes (or fail with "can't allocate memory") and is now one
``kepp: error:`` line naming the option or file and the size, the process's peak memory low.
(Weights whose tensors expand or stride to 120 GB and word lists whose header claims 10¹¹ words:
``tests/test_safe_load.py``.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kepp_core.video.s3d import S3D
from tests.helpers import hostile_weights as hw
from tests.helpers.cli import assert_one_line_error, run_kepp_measured
from tests.helpers.s3d import official_checkpoints, write_release
from tests.helpers import hostile
from tests.helpers.cli import in_process, one_error

ENV = {"KEPP_THREADS": "1", "OMP_NUM_THREADS": "1"}
PEAK = 1536 * 2**20  # python + torch take about 400 MB; each case asked for gigabytes


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return write_release(tmp_path_factory.mktemp("release"), ["crack", "egg", "whisk"])


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    from kepp_core.video import write_video

    return write_video(tmp_path_factory.mktemp("video") / "a.mp4", np.full((24, 48, 64, 3), 90, np.uint8), 24)


def _low(peak: int) -> None:
    assert peak < PEAK, f"peak memory {peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("options, words", [
    ("batch=4096", ["batch=4096", "224 px", "GiB", "use batch="]),
    ("size=1024,batch=16", ["batch=16", "1024 px", "GiB", "use batch=10"]),
], ids=["batch-4096-at-the-default-crop", "batch-16-at-the-long-crop"])
@pytest.mark.slow
def test_a_batch_that_does_not_fit_the_memory_budget_is_refused_before_decoding(options, words, release, video,
                                                                                tmp_path):
    r, peak = run_kepp_measured("features", "encode", video, "--out", tmp_path / "o.npy", "--encoder",
                                f"s3d:{release},{options}", env=ENV)
    assert_one_line_error(r, *words)
    _low(peak)
    assert not (tmp_path / "o.npy").exists()


@pytest.mark.slow
def test_a_batch_that_fits_still_encodes(release, video, tmp_path):
    r, _ = run_kepp_measured("features", "encode", video, "--out", tmp_path / "o.npy", "--encoder",
                             f"s3d:{release},size=32,batch=64", env=ENV)
    assert r.returncode == 0, r.stderr
    assert np.load(tmp_path / "o.npy").shape == (1, 512)


@pytest.mark.slow
def test_grounding_100000_steps_is_refused_naming_the_option(release, video, tmp_path):
    steps = [f"step {k}" for k in range(100_000)]
    r, peak = run_kepp_measured("features", "ground", video, "--encoder", f"s3d:{release}", "--steps", *steps, env=ENV)
    assert_one_line_error(r, "--steps", "100,000 step names", "20,000")
    _low(peak)


def test_a_grounding_matrix_beyond_its_budget_is_refused_before_it_is_computed():
    from kepp_core.errors import KeppError
    from kepp_core.video.grounding import MAX_SCORES, StepTexts, second_scores

    texts = StepTexts(tuple(f"s{k}" for k in range(1000)), np.ones((1000, 4)))
    feats = np.lib.stride_tricks.as_strided(np.zeros(4), (MAX_SCORES // 1000 + 1, 4), (0, 8))  # no memory
    with pytest.raises(KeppError, match="seconds × 1,000 steps"):
        second_scores(feats, texts)


def test_the_text_tower_embeds_a_long_step_list_in_bounded_batches(release):
    """2,000 names (four batches): the same embeddings as one at a time, memory per batch bounded."""
    from kepp_core import api
    from kepp_core.video.s3d import TEXT_BATCH

    net = S3D.load(release, device="cpu")
    names = [f"crack egg {k}" if k % 2 else "whisk" for k in range(4 * TEXT_BATCH)]
    together = net.text(names)
    assert together.shape == (len(names), 512)
    torch.testing.assert_close(together[TEXT_BATCH + 1], net.text([names[TEXT_BATCH + 1]])[0])


def _official_with_steps(folder, n_steps: int, expanded: bool):
    """The test's official planning checkpoint whose diffusion schedule has ``n_steps`` entries
    (stride 0 over one stored number when ``expanded``: 4·10¹⁰ bytes as a view)."""
    from kepp_core.diffusion.official import SCHEDULE

    plan, step = official_checkpoints(folder, actions=4, obs=6)
    ck = torch.load(plan, weights_only=True)
    for weights in ("ema", "model"):
        for key in ("module.betas", *(f"module.{name}" for name in SCHEDULE)):
            ck[weights][key] = torch.full((1,), 0.01).expand(n_steps) if expanded else torch.full((n_steps,), 0.01)
    torch.save(ck, plan)
    return plan, step


@pytest.mark.parametrize("n_steps, expanded, words", [
    (10**10, True, ["10,000,000,000 elements", "refused before allocating"]),
    (200_001, False, ["'betas'", "200,001 diffusion steps", "1..100,000"]),
], ids=["10^10-steps-as-a-view", "200001-steps-stored"])
@pytest.mark.slow
def test_an_official_checkpoint_with_absurd_diffusion_steps_is_refused(n_steps, expanded, words, tmp_path):
    plan, step = _official_with_steps(tmp_path / "official", n_steps, expanded)
    r, peak = run_kepp_measured("models", "import", "--plan", plan, "--step", step, "-T", 3, "--out", tmp_path / "m",
                                env=ENV)
    assert_one_line_error(r, "plan.pth.tar", *words)
    _low(peak)
    assert not list((tmp_path / "m").rglob("*.safetensors"))


def test_a_word_list_header_claiming_10_to_the_11_words_allocates_nothing(release, video, tmp_path):
    words = hw.npy_claiming(tmp_path / "words.npy", (10**11,))
    r, peak = run_kepp_measured("features", "encode", video, "--out", tmp_path / "o.npy", "--encoder",
                                f"s3d:{release},dict={words}", env=ENV)
    assert_one_line_error(r, "words.npy", "truncated", "100000000000")
    _low(peak)


# --- header sizes that lie ---------------------------------------------------------------------------------
class TestHeaderSizesThatLie:
    """A header's sizes are checked against the file before anything is allocated."""

    def test_a_feature_file_claiming_25e12_values(self, capsys, tmp_path):
        p = hostile.npy_header_lie(tmp_path / "lie.npy")
        one_error(*in_process(capsys, "plan", p, "--start", 0, 1, "--goal", 2, 3), str(p), "promises")
