"""Feature files read as the field writes them, and only as much as they hold
(``kepp_core/data/feature_files.py``): a pickled feature dict is read by an allow-list unpickler whose numpy
stand-ins allocate nothing beyond the bytes the pickle carries, so an array declared without its data is
refused (numpy's own ``_reconstruct`` allocated the declared shape: 1.2 GB from a 100-byte file, or
uninitialised memory read as features); every feature array is ``[seconds, D]`` within 86,400 seconds and
65,536 columns before it is built; and the two usual ways to pickle a dict of arrays (the highest protocol,
numpy's ``_frombuffer``; protocol 2, ``_codecs.encode``) load, as pickles, ``np.save`` dicts and plain arrays."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from kepp_core.data.feature_files import load_features, read_feature_shape
from kepp_core.data.records import MAX_VIDEO_SECONDS
from kepp_core.errors import KeppError
from kepp_core.video.encode import MAX_FEATURE_DIM
from tests.helpers.cli import assert_one_line_error, run_kepp_measured
from tests.helpers.hostile import array_short_of_data, array_without_data, features_pickle, ndarray_called
from tests.helpers.split_lists import write_lists

FEATS = np.arange(20 * 8, dtype=np.float32).reshape(20, 8) / 7


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
@pytest.mark.parametrize("layout", ["float32", "fortran-order", "big-endian-float64"])
def test_a_feature_dict_pickled_with_protocol_2_or_the_highest_loads_as_it_was_written(tmp_path, protocol, layout):
    path = tmp_path / "v.npy"
    feats = {"float32": FEATS, "fortran-order": np.asfortranarray(FEATS), "big-endian-float64": FEATS.astype(">f8")}
    path.write_bytes(pickle.dumps({"frames_features": feats[layout], "steps_ids": np.array([3, 1]), "n": np.int64(2)},
                                  protocol))
    np.testing.assert_array_equal(load_features(path, dim=8), FEATS)
    assert read_feature_shape(path) == (20, 8)


@pytest.mark.parametrize("shape", [(20, 8), (100_000, 1_500)], ids=["small", "1.2-GB"])
def test_an_array_declared_without_its_data_is_refused(tmp_path, shape):
    path = tmp_path / "v.npy"
    path.write_bytes(array_without_data(shape))
    with pytest.raises(KeppError, match=r"v\.npy: .*an array without its data"):
        load_features(path)


def test_numpy_ndarray_called_by_the_pickle_is_refused(tmp_path):
    path = tmp_path / "v.npy"
    path.write_bytes(ndarray_called((100_000, 1_500)))
    with pytest.raises(KeppError, match=r"v\.npy: .*numpy\.ndarray called directly"):
        load_features(path)


def test_an_array_whose_shape_asks_for_more_than_its_bytes_is_refused(tmp_path):
    path = tmp_path / "v.npy"
    path.write_bytes(array_short_of_data((100_000, 1_500)))
    with pytest.raises(KeppError, match=r"v\.npy: .*declares 600,000,000 bytes and holds 16"):
        load_features(path)


BEYOND = {"seconds": (int(MAX_VIDEO_SECONDS) + 1, 1), "columns": (2, MAX_FEATURE_DIM + 1)}


@pytest.mark.parametrize("how", ["plain", "pickled", "np.save-dict"])
@pytest.mark.parametrize("bound", list(BEYOND))
def test_features_beyond_a_day_of_seconds_or_65536_columns_are_refused(tmp_path, how, bound):
    path, feats = tmp_path / "v.npy", np.ones(BEYOND[bound], np.float32)
    if how == "plain":
        np.save(path, feats)
    elif how == "pickled":
        path.write_bytes(features_pickle(feats))
    else:
        np.save(path, {"frames_features": feats}, allow_pickle=True)
    words = rf"v\.npy: features of shape \[{feats.shape[0]}, {feats.shape[1]}\]: expected at most 86,400 seconds"
    with pytest.raises(KeppError, match=words):
        read_feature_shape(path)


@pytest.mark.slow
def test_a_100_byte_feature_file_declaring_1_2_gb_allocates_nothing_and_says_so(tmp_path):
    p = write_lists(tmp_path / "lists", features="pickle")
    (p["features"] / "tea_0003.npy").write_bytes(array_without_data((100_000, 1_500)))
    r, peak = run_kepp_measured("data", "stats", "--dataset", "split-lists", "--root", p["root"])
    assert_one_line_error(r, "tea_0003.npy", "an array without its data")
    assert peak < 400 * 2**20, f"peak {peak / 2**20:.0f} MiB"
