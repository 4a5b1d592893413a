"""The structured (linear-chain) training loss against brute-force enumeration, its gradients
(gradcheck), its numerical safety off the graph, and a tiny training run."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from kepp_core.errors import KeppError
from kepp_core.graph import ProcedureGraph
from kepp_core.training.structured import (
    StructuredLoss,
    chain_log_partition,
    chain_score,
    graph_sparse_transitions,
    graph_transitions,
    sparse_chain_log_partition,
    sparse_transitions,
    structured_nll,
)


def random_graph(seed: int, a: int) -> ProcedureGraph:
    rng = np.random.default_rng(seed)
    plans = [tuple(rng.integers(0, a, size=rng.integers(2, 5)).tolist()) for _ in range(6)]
    return ProcedureGraph.from_plans([f"s{i}" for i in range(a)], plans)


def brute_scores(e: torch.Tensor, trans: torch.Tensor) -> dict[tuple[int, ...], torch.Tensor]:
    """Score of every plan of one query (``e`` ``[T, A]``), by enumeration."""
    t_len, a = e.shape
    return {seq: sum(e[t, x] for t, x in enumerate(seq)) + sum(trans[u, v] for u, v in itertools.pairwise(seq))
            for seq in itertools.product(range(a), repeat=t_len)}


@pytest.mark.parametrize("seed", range(12))
def test_partition_function_equals_enumeration(seed):
    gen = torch.Generator().manual_seed(seed)
    a, t_len = 2 + seed % 3, 1 + seed % 4
    e = torch.randn(3, t_len, a, generator=gen, dtype=torch.float64) * 3
    trans = 0.7 * graph_transitions(random_graph(seed, a), dtype=torch.float64)
    log_z = chain_log_partition(e, trans)
    assert log_z.shape == (3,)  # one partition function per sequence, every one checked below
    for b in range(3):
        scores = torch.stack(list(brute_scores(e[b], trans).values()))
        assert float(log_z[b]) == pytest.approx(float(torch.logsumexp(scores, 0)), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_nll_equals_minus_log_probability_of_the_true_plan(seed):
    gen = torch.Generator().manual_seed(100 + seed)
    a, t_len, scale = 3 + seed % 2, 2 + seed % 3, [0.5, 1.0, 2.0][seed % 3]
    e = torch.randn(4, t_len, a, generator=gen, dtype=torch.float64)
    plans = torch.randint(0, a, (4, t_len), generator=gen)
    trans = graph_transitions(random_graph(seed, a), dtype=torch.float64)
    nll = structured_nll(e, plans, trans, scale, reduction="none")
    for b in range(4):
        table = brute_scores(e[b], scale * trans)
        z = sum(torch.exp(s) for s in table.values())
        want = -torch.log(torch.exp(table[tuple(plans[b].tolist())]) / z)
        assert float(nll[b]) == pytest.approx(float(want), rel=1e-10)
    assert float(structured_nll(e, plans, trans, scale)) == pytest.approx(float(nll.mean()), rel=1e-12)
    loss = StructuredLoss(trans, scale=scale).double()
    assert loss(e, plans).item() == pytest.approx(float(nll.mean()), rel=1e-12)


def test_gradients_match_finite_differences():
    gen = torch.Generator().manual_seed(0)
    trans = graph_transitions(random_graph(0, 3), dtype=torch.float64)
    e = torch.randn(2, 3, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    scale = torch.tensor(0.8, dtype=torch.float64, requires_grad=True)
    plans = torch.tensor([[0, 1, 2], [2, 2, 0]])
    assert torch.autograd.gradcheck(lambda x, s: structured_nll(x, plans, trans, s), (e, scale))
    assert torch.autograd.gradgradcheck(lambda x, s: structured_nll(x, plans, trans, s), (e, scale))


def test_plans_off_the_graph_have_finite_loss_and_gradient():
    g = ProcedureGraph.from_plans(list("abc"), [(0, 1, 2)])
    loss = StructuredLoss(g)
    e = torch.zeros(2, 3, 3, requires_grad=True)
    value = loss(e, torch.tensor([[2, 1, 0], [1, 1, 1]]))  # no such edges at all
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(e.grad).all() and torch.isfinite(loss.scale.grad)
    assert value.item() > loss(torch.zeros(1, 3, 3), torch.tensor([[0, 1, 2]])).item()


def test_a_tiny_training_run_decreases_the_loss():
    torch.manual_seed(0)
    a, t_len, b = 6, 4, 64
    g = random_graph(7, a)
    trans = graph_transitions(g)
    # true plans: walks of the graph; inputs: noisy one-hot of each position's action
    plans = torch.zeros(b, t_len, dtype=torch.long)
    plans[:, 0] = torch.randint(0, a, (b,))
    probs = trans.exp()
    for t in range(1, t_len):
        plans[:, t] = torch.multinomial(probs[plans[:, t - 1]], 1).squeeze(1)
    x = torch.nn.functional.one_hot(plans, a).float() + 0.8 * torch.randn(b, t_len, a)
    model = torch.nn.Linear(a, a)
    loss_fn = StructuredLoss(g, scale=0.1)
    opt = torch.optim.Adam([*model.parameters(), *loss_fn.parameters()], lr=0.05)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = loss_fn(model(x), plans)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert loss_fn.scale.item() > 0.1  # the graph helps: its weight grows


def test_fixed_scale_is_a_buffer_not_a_parameter():
    loss = StructuredLoss(torch.zeros(3, 3), scale=2.0, learn_scale=False)
    assert list(loss.parameters()) == [] and float(loss.scale) == 2.0 and loss.num_actions == 3
    assert {"scale", "base", "edge_src", "edge_dst", "edge_logp"} <= set(loss.state_dict())


def test_sparse_partition_equals_the_dense_reference():
    """The O(A + E) recursion against the dense logsumexp one, on graphs (floored) and on arbitrary
    matrices (every entry above the minimum an edge), at scales from 0 to 20 (no underflow)."""
    gen = torch.Generator().manual_seed(5)
    for seed in range(6):
        a, t_len = 4 + seed, 2 + seed % 4
        e = torch.randn(3, t_len, a, generator=gen, dtype=torch.float64) * 4
        graph_trans = graph_transitions(random_graph(seed, a), dtype=torch.float64)
        for trans in (graph_trans, torch.randn(a, a, generator=gen, dtype=torch.float64)):
            for scale in (0.0, 0.3, 1.0, 20.0):
                want = chain_log_partition(e, scale * trans)
                got = sparse_chain_log_partition(e, sparse_transitions(trans), scale)
                assert torch.allclose(got, want, rtol=1e-12, atol=1e-12), (seed, scale)
    # float32 emissions (training): float32 out, within float32 round-off of the reference
    e32 = torch.randn(8, 3, 6, generator=gen) * 10
    trans = graph_transitions(random_graph(1, 6))
    got = sparse_chain_log_partition(e32, sparse_transitions(trans))
    assert got.dtype == torch.float32
    assert torch.allclose(got, chain_log_partition(e32.double(), trans.double()).float(), rtol=1e-6)


def test_the_sparse_loss_has_the_dense_gradients_and_passes_gradcheck():
    """The sparse recursion's gradients (emissions and the learned scale) against finite differences
    and against the dense reference's, at a scale where the floor and the edges both matter."""
    gen = torch.Generator().manual_seed(3)
    trans = graph_transitions(random_graph(2, 4), dtype=torch.float64)
    sparse = sparse_transitions(trans)
    plans = torch.tensor([[0, 1, 2], [3, 3, 0], [1, 0, 2]])
    e = torch.randn(3, 3, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    scale = torch.tensor(1.3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, s: structured_nll(x, plans, sparse, s), (e, scale))
    assert torch.autograd.gradgradcheck(lambda x, s: structured_nll(x, plans, sparse, s), (e, scale))
    got = torch.autograd.grad(structured_nll(e, plans, sparse, scale), (e, scale))
    want = torch.autograd.grad(structured_nll(e, plans, trans, scale), (e, scale))
    for g, w in zip(got, want):
        assert torch.allclose(g, w, rtol=1e-10, atol=1e-12)


def test_graph_sparse_transitions_are_the_floored_graph():
    edges = []
    for seed in range(5):
        g = random_graph(seed, 3 + seed)
        st = graph_sparse_transitions(g, dtype=torch.float64)
        assert torch.equal(st.dense(), graph_transitions(g, dtype=torch.float64))
        pairs = torch.cartesian_prod(torch.arange(g.num_actions), torch.arange(g.num_actions))
        assert torch.equal(st.lookup(pairs[:, 0], pairs[:, 1]), st.dense()[pairs[:, 0], pairs[:, 1]])
        assert len(st.src) == g.counts.nnz  # a floor of 1e-6 drops no edge of a small graph
        edges.append(len(st.src))
    assert len(edges) == 5 and min(edges) > 0, edges  # every graph has edges: the lookups compare something


def test_a_resume_state_with_the_dense_matrix_loads():
    """A loss saved before the sparse form held ``transitions`` [A, A]; loading it gives the same loss."""
    g = random_graph(3, 5)
    old = {"transitions": graph_transitions(g), "scale": torch.tensor(0.7)}
    loss = StructuredLoss(g, scale=0.1)
    loss.load_state_dict(old)
    e, plans = torch.randn(4, 3, 5), torch.randint(0, 5, (4, 3))
    assert float(loss.scale.detach()) == pytest.approx(0.7)
    assert torch.allclose(loss(e, plans), structured_nll(e, plans, graph_transitions(g), 0.7))


def test_chain_score_of_a_plan():
    e = torch.arange(6.0).reshape(1, 2, 3)
    trans = torch.tensor([[0.0, -1.0, -2.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    assert chain_score(e, trans, torch.tensor([[0, 2]])).tolist() == [0.0 + 5.0 - 2.0]


@pytest.mark.parametrize("call, message", [
    (lambda: structured_nll(torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.long), torch.zeros(3, 3)),
     "float tensor [B, T, A]"),
    (lambda: structured_nll(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.long), torch.zeros(4, 4)),
     "expected [3, 3]"),
    (lambda: structured_nll(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.long),
                            torch.full((3, 3), -float("inf"))), "use graph_transitions"),
    (lambda: structured_nll(torch.zeros(1, 2, 3), torch.zeros(1, 3, dtype=torch.long), torch.zeros(3, 3)),
     "integer tensor [1, 2]"),
    (lambda: structured_nll(torch.zeros(1, 2, 3), torch.tensor([[0, 3]]), torch.zeros(3, 3)),
     "index 3 outside 0..2"),
    (lambda: structured_nll(torch.zeros(1, 2, 3), torch.tensor([[0, 1]]), torch.zeros(3, 3), reduction="avg"),
     "unknown reduction 'avg'"),
    (lambda: structured_nll(torch.zeros(1, 2, 3), torch.tensor([[0, 1]]), torch.zeros(3, 3), float("nan")),
     "transition scale nan"),
    (lambda: StructuredLoss(torch.zeros(2, 3)), "square [A, A]"),
    (lambda: StructuredLoss(torch.full((2, 2), -float("inf"))), "contain -inf"),
    (lambda: graph_transitions(ProcedureGraph.from_plans(["a"], [(0, 0)]), floor=0.0), "floor 0.0"),
])
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(KeppError) as err:
        call()
    assert message in str(err.value)
