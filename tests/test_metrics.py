"""SR, mAcc and the two mIoU variants (paper supplement C.4)."""

from __future__ import annotations

import numpy as np
import pytest

from kepp_core import metrics
from kepp_core.errors import KeppError
from kepp_core.evaluation import mean_accuracy, miou_per_batch, miou_per_episode, plan_metrics, success_rate
from tests.helpers import metric_oracles


def test_success_rate_needs_the_whole_plan_right():
    assert success_rate([(1, 2, 3), (1, 2, 4), (0, 2, 3)], [(1, 2, 3)] * 3) == pytest.approx(100 / 3)
    assert success_rate([], []) == 0.0


def test_mean_accuracy_averages_over_episodes_and_positions():
    assert mean_accuracy([(1, 2, 3), (1, 0, 0)], [(1, 2, 3), (1, 2, 3)]) == pytest.approx(400 / 6)


def test_miou_per_episode_compares_action_sets():
    # {1, 2} vs {1, 2}: 1; {1} vs {1, 2, 3}: 1/3 (order and repeats do not matter)
    assert miou_per_episode([(2, 1, 1), (1, 1, 1)], [(1, 2, 2), (1, 2, 3)]) == pytest.approx(100 * (1 + 1 / 3) / 2)


def test_miou_per_batch_pools_sets_over_consecutive_batches_of_256():
    gt = [(k % 7, 100 + k % 5) for k in range(300)]  # 12 actions in each batch
    pred = list(gt)
    pred[0] = (6, 999)  # one extra action in the first batch (episodes 0..255)
    pred[299] = (0, 0)  # the second batch (256..299) loses the actions of episode 299
    first_p = {a for p in pred[:256] for a in p}
    first_g = {a for g in gt[:256] for a in g}
    second_p = {a for p in pred[256:] for a in p}
    second_g = {a for g in gt[256:] for a in g}
    expected = 100 * (len(first_p & first_g) / len(first_p | first_g)
                      + len(second_p & second_g) / len(second_p | second_g)) / 2
    assert miou_per_batch(pred, gt) == pytest.approx(expected)
    assert len(first_p & first_g) / len(first_p | first_g) == pytest.approx(12 / 13)
    # The pooled variant is forgiving where the per-episode one is not.
    assert miou_per_batch([(1, 2), (2, 1)], [(2, 1), (1, 2)]) == 100.0
    assert miou_per_episode([(1, 1), (2, 2)], [(1, 2), (1, 2)]) == 50.0
    assert miou_per_batch([(1, 1), (2, 2)], [(1, 2), (1, 2)]) == 100.0


def test_batches_follow_the_given_order():
    pred = [(1,), (2,)]
    gt = [(1,), (3,)]
    assert miou_per_batch(pred, gt, batch_size=1) == 50.0
    assert miou_per_batch(pred, gt, batch_size=2) == pytest.approx(100 / 3)


def test_metrics_accept_numpy_arrays():
    pred = np.array([[1, 2, 3], [1, 2, 4]])
    gt = np.array([[1, 2, 3], [1, 2, 3]])
    m = plan_metrics(pred, gt)
    assert m == {"episodes": 2, "sr": 50.0, "macc": pytest.approx(500 / 6),
                 "miou_episode": pytest.approx(75.0), "miou_batch": pytest.approx(75.0)}


def test_mismatched_predictions_are_errors():
    with pytest.raises(KeppError, match="2 predicted plans for 1"):
        success_rate([(1,), (2,)], [(1,)])
    with pytest.raises(KeppError, match="plan 0: predicted 2 steps for a ground truth of 3"):
        mean_accuracy([(1, 2)], [(1, 2, 3)])
    with pytest.raises(KeppError, match="batch size"):
        miou_per_batch([(1,)], [(1,)], batch_size=0)



def test_the_failure_decomposition_multiplies_back_to_the_success_rate():
    """SR = ends right × (SR if ends right) / 100, on random plans (brute force over the episodes)."""
    import numpy as np

    from kepp_core.metrics import endpoint_rate, success_given_endpoints, success_rate

    rng = np.random.default_rng(5)
    mixed = 0  # problems where some, not all, of the episodes with both ends right are wholly right
    for _ in range(50):
        gt = rng.integers(0, 3, size=(int(rng.integers(1, 30)), int(rng.integers(2, 5))))
        pred = np.where(rng.random(gt.shape) < 0.7, gt, rng.integers(0, 3, size=gt.shape))
        ends = [bool(p[0] == g[0] and p[-1] == g[-1]) for p, g in zip(pred, gt)]
        assert endpoint_rate(pred, gt) == pytest.approx(100 * sum(ends) / len(gt))
        right = [bool((p == g).all()) for p, g, e in zip(pred, gt, ends) if e]
        assert success_given_endpoints(pred, gt) == pytest.approx(100 * sum(right) / len(right) if right else 0.0)
        assert success_rate(pred, gt) == pytest.approx(endpoint_rate(pred, gt) * success_given_endpoints(pred, gt) / 100)
        mixed += 0 < sum(right) < len(right)
    assert mixed == 25  # half of the 50 problems: the rates in between 0 and 100 are checked, not only the ends
    wrong_start = (np.array([[0, 1, 2]]), np.array([[1, 1, 2]]))  # no episode has both ends right: 0, not 0/0
    assert (endpoint_rate(*wrong_start), success_given_endpoints(*wrong_start), success_rate(*wrong_start)) == (0, 0, 0)


# --- the field's evaluation codes, exactly --------------------------------------------------------------------
@pytest.mark.parametrize(("code", "reported"), [("pdpp", "pdpp"), ("pdpp-printed", "pdpp_printed"), ("vpn", "vpn")])
def test_protocol_metrics_equal_what_each_code_reported_on_every_fixture_case(protocol_metrics_cases, code, reported):
    from kepp_core.catalog.benchmark import protocol_metrics

    assert len(protocol_metrics_cases) == 7  # the six cases and one of the unified benchmark's size (4,531 episodes)
    for k, case in enumerate(protocol_metrics_cases):
        got = protocol_metrics(case["pred"], case["gt"], code, batch_size=case["batch_size"])
        assert set(got) == set(case[reported]), k
        for key, want in case[reported].items():
            # to the last bits: PDPP's first/last-step meters sum float32 tensors (up to 4e-6 from a float64 mean)
            assert abs(got[key] - want) <= 1e-9, (k, code, key, got[key], want)


def test_the_codes_differ_where_the_readme_says_and_agree_on_sr_and_macc(protocol_metrics_cases):
    from kepp_core.catalog.benchmark import protocol_metrics

    case = protocol_metrics_cases[1]  # T=3, 105 actions, batches of 256
    pdpp = protocol_metrics(case["pred"], case["gt"], "pdpp")
    vpn = protocol_metrics(case["pred"], case["gt"], "vpn")
    kepp = protocol_metrics(case["pred"], case["gt"], "kepp")
    assert pdpp["sr"] == pytest.approx(vpn["sr"], abs=1e-5) == pytest.approx(kepp["sr"], abs=1e-5)
    assert round(pdpp["miou_batch"], 1) == 99.7 and round(pdpp["miou_episode"], 1) == 65.5
    assert round(vpn["miou"], 1) == 75.6 and round(vpn["miou_classic"], 1) == 96.9
    assert kepp["miou_episode"] == pytest.approx(pdpp["miou_episode"])


def test_vpn_miou_is_bitwise_on_action_ids_not_a_set_iou():
    from kepp_core.catalog.benchmark import protocol_metrics

    # {1, 2} vs {1, 2} is a set IoU of 1; bit by bit 1&2 + 2&1 = 0 of 1|2 + 2|1 = 6
    assert protocol_metrics([(1, 2)], [(2, 1)], "vpn")["miou"] == pytest.approx(1e-6 / (6 + 1e-6) * 100)
    assert protocol_metrics([(1, 2)], [(2, 1)], "pdpp")["miou_episode"] == 100.0


def test_pdpp_weights_batches_by_their_episodes_where_kepps_mean_does_not():
    from kepp_core.catalog.benchmark import protocol_metrics

    gt = [(1, 2)] * 3
    pred = [(1, 2), (1, 2), (3, 4)]  # batches of 2: IoU 1 (2 episodes), then 0 (1 episode)
    assert protocol_metrics(pred, gt, "pdpp", batch_size=2)["miou_batch"] == pytest.approx(200 / 3)
    assert protocol_metrics(pred, gt, "kepp", batch_size=2)["miou_batch"] == pytest.approx(50.0)


def test_protocol_metrics_refuses_an_unknown_code_and_a_bad_batch():
    from kepp_core.catalog.benchmark import protocol_metrics

    with pytest.raises(KeppError, match="unknown metric family 'pdp'"):
        protocol_metrics([(1, 2)], [(1, 2)], "pdp")
    with pytest.raises(KeppError, match="batch size must be at least 1"):
        protocol_metrics([(1, 2)], [(1, 2)], "vpn", batch_size=0)
    with pytest.raises(KeppError, match="several horizons"):
        protocol_metrics([(1, 2), (1, 2, 3)], [(1, 2), (1, 2, 3)], "pdpp")


@pytest.mark.parametrize("n,horizon,low,ids,batch", [(1, 3, 0, 5, 256), (255, 4, 0, 20, 256), (256, 3, 0, 133, 256),
                                                      (1000, 6, 0, 133, 256), (3001, 5, 0, 778, 256), (700, 3, 0, 9, 7),
                                                      (513, 4, 0, 10**12, 256), (300, 3, 0, 3, 1), (400, 4, -6, 6, 64)])
def test_the_codes_over_all_batches_at_once_equal_their_batch_by_batch_loops(n, horizon, low, ids, batch):
    """Every batch at once (flags per batch, running sums, numpy's mean per row) gives the loops' numbers, bit
    for bit, over batch sizes, horizons and action ids from a handful (negative ones too) to ids past any dense
    table."""
    rng = np.random.default_rng(n + horizon)
    gt = rng.integers(low, ids, size=(n, horizon))
    pred = np.where(rng.random((n, horizon)) < 0.4, rng.integers(low, ids, size=(n, horizon)), gt)
    pred[::5] = gt[::5]
    assert metrics.pdpp_metrics(pred, gt, batch) == metric_oracles.pdpp_metrics(pred, gt, batch)
    assert metrics.vpn_metrics(pred, gt, batch) == metric_oracles.vpn_metrics(pred, gt, batch)
    assert metrics.miou_per_batch(pred, gt, batch) == metric_oracles.miou_per_batch(pred, gt, batch)
    assert metrics.set_iou(pred, gt).tolist() == metrics.iou_per_episode(pred.tolist(), gt.tolist())
    assert metrics.kepp_metrics(pred, gt, batch) == metrics.kepp_metrics(pred.tolist(), gt.tolist(), batch)  # lists: per plan
