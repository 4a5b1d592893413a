"""No weights file or word list crashes a command, hangs it or makes it allocate what the file
claims: every one the audit tried (and more) is one ``kepp: error:`` line naming the file, through
the real command line in a fresh process (a segmentation fault fails the test instead of pytest),
with the process's peak memory bounded (``kepp_core.safe_load``)."""

from __future__ import annotations

import shutil
import threading

import numpy as np
import pytest
import torch

from tests.helpers import hostile_weights as hw
from tests.helpers.cli import assert_one_line_error, run_kepp, run_kepp_measured
from tests.helpers.s3d import write_release
from tests.helpers import hostile
from tests.helpers.cli import in_process, one_error
from tests.helpers.hostile import need_official

ENV = {"KEPP_THREADS": "1", "OMP_NUM_THREADS": "1"}
PEAK = 1536 * 2**20  # generous: python + torch + the check take about 400 MB; the files claim gigabytes
WORDS = ["crack", "egg", "whisk"]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return write_release(tmp_path_factory.mktemp("release"), WORDS)


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    from kepp_core.video import write_video

    path = tmp_path_factory.mktemp("video") / "a.mp4"
    return write_video(path, np.full((24, 48, 64, 3), 90, np.uint8), 24)


def _rule_state(edit):
    from kepp_core.video.s3d import rule_state_dict

    state = rule_state_dict(len(WORDS) + 1)
    edit(state)
    return state


def _negative_variance(state):
    state["mixed_4b.conv_b1_b.bn2.running_var"][3] = -1e-5  # var + eps = 0: a division by zero


def _nan_weight(state):
    state["fc.weight"][0, 0] = float("nan")


# name: (maker(folder) -> weights path, words of the one error line)
WEIGHTS = {
    "deep-tuple-zip": (lambda d: hw.deep_tuple(d / "w.pth", zipped=True), ["data.pkl", "levels deep"]),
    "deep-tuple-plain-pickle": (lambda d: hw.deep_tuple(d / "w.pth", zipped=False), ["levels deep"]),
    "deep-list-beside-a-state-dict": (lambda d: hw.deep_list_in_state_dict(d / "w.pth"), ["levels deep"]),
    "deflated-to-3-gib": (lambda d: hw.deflated_storage(d / "w.pth"), ["compressed", "refused before inflating"]),
    "storage-claims-80-gb-zip": (lambda d: hw.storage_lie(d / "w.pth"), ["85,899,345,920 bytes",
                                                                          "refused before allocating"]),
    "storage-claims-80-gb-plain": (lambda d: hw.storage_lie(d / "w.pth", plain=True), ["refused before allocating"]),
    "expanded-to-120-gb": (lambda d: hw.saved(d / "w.pth", {"w": torch.ones(1).expand(30 * 10**9)}),
                           ["30,000,000,000 elements", "refused before allocating"]),
    "expanded-plain-format": (lambda d: hw.saved(d / "w.pth", {"w": torch.ones(1).expand(30 * 10**9)}, plain=True),
                              ["30,000,000,000 elements", "refused before allocating"]),
    "strided-overlap-to-40-gb": (lambda d: hw.saved(d / "w.pth", {"w": torch.ones(2 * 10**5).as_strided(
        (10**5, 10**5), (1, 1))}), ["10,000,000,000 elements", "refused before allocating"]),
    "complex-storage": (lambda d: hw.saved(d / "w.pth", {"w": torch.zeros(2, dtype=torch.complex64)}),
                        ["ComplexFloatStorage", "real numbers"]),
    "a-global-that-runs-code": (lambda d: hw.global_call(d / "w.pth"), ["weights_only=True"]),
    "no-data-pkl": (lambda d: hw.torch_zip(d / "w.pth", b"", {}) and _drop_pkl(d / "w.pth"), ["no data.pkl"]),
    "tar-archive": (lambda d: hw.torch_tar(d / "w.pth"), ["neither its zip nor its plain format"]),
    "empty-file": (lambda d: _write(d / "w.pth", b""), ["neither its zip nor its plain format"]),
    "text-file": (lambda d: _write(d / "w.pth", b"weights\n"), ["neither its zip nor its plain format"]),
    "truncated-archive": (lambda d: _truncated(d / "w.pth"), ["w.pth"]),
    "five-gib-file": (lambda d: hw.sparse_file(d / "w.pth"), ["5,368,709,120 bytes", "more than"]),
    "a-fifo": (lambda d: hw.fifo(d / "w.pth"), ["w.pth", "not a regular file"]),
    "a-folder": (lambda d: (d / "w.pth").mkdir() or d / "w.pth", ["w.pth", "folder"]),
    "negative-running-variance": (lambda d: hw.saved(d / "w.pth", _rule_state(_negative_variance)),
                                  ["'mixed_4b.conv_b1_b.bn2.running_var'", "negative variance"]),
    "nan-weight": (lambda d: hw.saved(d / "w.pth", _rule_state(_nan_weight)), ["'fc.weight'", "non-finite"]),
}


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def _drop_pkl(path):
    kept = [(i, d) for i, d in hw._records(path) if not i.filename.endswith("data.pkl")]
    return hw._rewrite(path, kept)


def _truncated(path):
    hw.saved(path, _rule_state(lambda s: None))
    data = path.read_bytes()
    return _write(path, data[: len(data) // 2])


# name: (maker(folder) -> word list path, words of the one error line)
WORD_LISTS = {
    "an-npz-archive": (lambda d: hw.npz_of(d / "words.npy", WORDS), [".npz archive"]),
    "bytes-not-utf8": (lambda d: hw.npy_of(d / "words.npy", np.array([b"crack", b"\xff\xfe", b"whisk"])),
                       ["word 1", "not UTF-8"]),
    "header-claims-10^11-words": (lambda d: hw.npy_claiming(d / "words.npy", (10**11,)),
                                  ["truncated", "100000000000"]),
    "header-claims-a-7-tib-matrix": (lambda d: hw.npy_claiming(d / "words.npy", (10**6, 10**6), "<U2"),
                                     ["truncated"]),
    "an-object-array": (lambda d: hw.npy_of(d / "words.npy", np.array(["crack", None, "whisk"], dtype=object)),
                        ["object", "expected strings"]),
    "a-pickle-nested-deep": (lambda d: hw.deep_object_npy(d / "words.npy"), ["object", "expected strings"]),
    "numbers": (lambda d: hw.npy_of(d / "words.npy", np.zeros(3)), ["float64", "expected strings"]),
    "a-matrix-of-words": (lambda d: hw.npy_of(d / "words.npy", np.array([WORDS])), ["1-D"]),
    "a-text-file": (lambda d: _write(d / "words.npy", b"crack\negg\nwhisk\n"), ["no NumPy header"]),
    "a-fifo": (lambda d: hw.fifo(d / "words.npy"), ["words.npy", "not a regular file"]),
}


def _refused(video, tmp_path, spec, *words) -> None:
    """``kepp features encode`` with the encoder ``spec``: one error line holding ``words``, no crash, the
    process's peak memory under :data:`PEAK`, no output written."""
    out = tmp_path / "out.npy"
    r, peak = run_kepp_measured("features", "encode", video, "--out", out, "--encoder", spec, env=ENV, timeout=240)
    assert r.returncode != -11, "segmentation fault"
    assert_one_line_error(r, *words)
    assert peak < PEAK, f"peak memory {peak / 2**20:.0f} MiB"
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(WEIGHTS))
def test_a_hostile_weights_file_is_one_line_without_a_crash_or_an_allocation(case, release, video, tmp_path):
    make, words = WEIGHTS[case]
    folder = tmp_path / "s3d"
    folder.mkdir()
    shutil.copy(release.parent / "s3d_dict.npy", folder / "s3d_dict.npy")
    _refused(video, tmp_path, f"s3d:{make(folder)}", *words)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(WORD_LISTS))
def test_a_hostile_word_list_is_one_line_without_a_crash_or_an_allocation(case, release, video, tmp_path):
    make, words = WORD_LISTS[case]
    folder = tmp_path / "s3d"
    folder.mkdir()
    path = make(folder)
    _refused(video, tmp_path, f"s3d:{release},dict={path}", str(path), *words)


@pytest.mark.slow
def test_the_release_in_either_format_still_encodes(release, video, tmp_path):
    """The one loader reads what torch.save writes in both of its formats: the same features."""
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(release.parent / "s3d_dict.npy", plain / "s3d_dict.npy")
    hw.saved(plain / "s3d_howto100m.pth", torch.load(release, weights_only=True), plain=True)
    outs = []
    for k, weights in enumerate((release, plain / "s3d_howto100m.pth")):
        outs.append(tmp_path / f"{k}.npy")
        r = run_kepp("features", "encode", video, "--out", outs[-1], "--encoder", f"s3d:{weights},size=32", env=ENV)
        assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(outs[0]), np.load(outs[1]))


def test_a_fifo_as_an_official_checkpoint_is_refused_without_hanging(tmp_path):
    """``kepp models import --plan FIFO``: one line within seconds (it used to wait for a writer forever)."""
    plan = hw.fifo(tmp_path / "plan.pth.tar")
    step = hw.saved(tmp_path / "step.pth.tar", {"ema": {}, "model": {}})
    done = threading.Event()
    threading.Timer(60, lambda: done.is_set() or _unblock(plan)).start()
    try:
        r, _ = run_kepp_measured("models", "import", "--plan", plan, "--step", step, "-T", 3, "--out", tmp_path / "m",
                                 env=ENV, timeout=120)
    finally:
        done.set()
    assert_one_line_error(r, "plan.pth.tar", "not a regular file")
    assert not (tmp_path / "m" / "T3").exists()


def _unblock(path):
    """Open the FIFO for writing once, so that a reader stuck on it returns (the test then fails on its output)."""
    with open(path, "wb"):
        pass


# --- pickles and checkpoints -----------------------------------------------------------------------
class TestHostilePicklesAndCheckpoints:
    """No pickle or checkpoint crashes the interpreter, allocates what its header claims or is
    accepted with weights no model can use: one line naming the file and the part."""

    def test_a_tuple_nested_a_million_deep_does_not_crash_the_interpreter(self, tmp_path):
        p = tmp_path / "deep.pkl"
        p.write_bytes(hostile.deep_tuple_key())
        r = run_kepp("graph", "import", p, "--out", tmp_path / "g.json", timeout=120)
        assert r.returncode != -11, "segmentation fault"
        assert_one_line_error(r, str(p), "levels deep")
        assert not (tmp_path / "g.json").exists()

    @pytest.mark.parametrize("case", sorted(hostile.GRAPH_CASES))
    def test_a_malformed_graph_pickle_is_one_error(self, capsys, tmp_path, case):
        make, words = hostile.GRAPH_CASES[case]
        p = tmp_path / f"{case}.pkl"
        p.write_bytes(make())
        one_error(*in_process(capsys, "graph", "import", p, "--out", tmp_path / "g.json"), str(p), words)
        assert not (tmp_path / "g.json").exists()

    @pytest.mark.parametrize("case", sorted(hostile.CHECKPOINT_CASES))
    def test_poisoned_official_weights_are_refused(self, capsys, tmp_path, case):
        need_official()
        edit, words = hostile.CHECKPOINT_CASES[case]
        plan = hostile.poisoned(edit, f"{case}.pth.tar", tmp_path)
        step = hostile.OFFICIAL / "official-kepp-step-T3.pth.tar"
        code, err = in_process(capsys, "models", "import", "--plan", plan, "--step", step, "-T", 3,
                               "--out", tmp_path / "m")
        one_error(code, err, str(plan), words)
        assert not list((tmp_path / "m").rglob("*.safetensors"))

    @pytest.mark.parametrize("build, words", [
        (hostile.size_lie, ("85,899,345,920 bytes", "refused before allocating")),  # a storage claiming 80 GB
        (hostile.deep_data_pkl, ("data.pkl", "levels deep")),
    ], ids=["storage-claiming-80-gb", "data-pkl-nested-deep"])
    def test_an_archive_that_lies_is_refused_before_loading(self, capsys, tmp_path, build, words):
        need_official()
        plan = build(hostile.OFFICIAL / "official-kepp-plan-T3.pth.tar", tmp_path / "bad.pth.tar")
        code, err = in_process(capsys, "models", "import", "--plan", plan, "--step",
                               hostile.OFFICIAL / "official-kepp-step-T3.pth.tar", "-T", 3, "--out", tmp_path / "m")
        one_error(code, err, *words)

    def test_a_horizon_of_1000_is_refused(self, capsys, tmp_path):
        need_official()
        code, err = in_process(capsys, "models", "import", "--plan", hostile.OFFICIAL / "official-kepp-plan-T3.pth.tar",
                               "--step", hostile.OFFICIAL / "official-kepp-step-T3.pth.tar", "-T", 1000,
                               "--out", tmp_path / "m")
        one_error(code, err, "--horizon 1000", "2..64")
        assert not (tmp_path / "m").exists()

    def test_a_feature_pickle_nested_deep_is_refused(self, capsys, tmp_path):
        p = hostile.s3d_dict_nested_deep(tmp_path / "s3d.npy")
        one_error(*in_process(capsys, "plan", p, "--start", 0, 1, "--goal", 2, 3), str(p), "levels deep")
