"""``kepp graph build|import|paths|subgraph|zero-shot``: the procedure knowledge graph."""

from __future__ import annotations

import uuid

from kepp_core.catalog import GRAPH_PAIR
from kepp_core.commands._common import (DATASET_INPUTS, add_command, add_dataset_args, check_outputs, dataset_from_args, emit_json,
                                        print_table, writes)
from kepp_core.errors import KeppError
from kepp_core.io import has_suffix

COIN = "--dataset coin --root ../shared/data/coin/COIN.json"
NIV = "--dataset plans --root ../shared/data/niv/plans.jsonl"


def _scorers() -> list[str]:
    from kepp_core.graph import scorer_names

    return scorer_names()


def register(sub) -> None:
    """Add the ``kepp graph`` sub-commands."""
    p = sub.add_parser("graph", help="build, query and plan with the procedure knowledge graph (P²KG)")
    gsub = p.add_subparsers(dest="graph_command", metavar="SUBCOMMAND", required=True)
    scorers = _scorers()

    b = add_command(gsub, "build", "build the graph from a dataset's training plans and save it as JSON",
                    f"  kepp graph build {COIN} --out runs/coin/graph.json\n"
                    f"  kepp graph build {NIV} --out runs/niv/graph.json --json\n"
                    "  kepp graph build --dataset plans --root huge.jsonl --out runs/huge/graph.safetensors --no-fit\n"
                    "\nplans-JSONL files are streamed (bounded memory: distinct plans, not every plan, are kept);\n"
                    "a .safetensors --out writes the compact form (arrays + JSON header), --compact writes it\n"
                    "next to the JSON; 'kepp graph paths --graph' reads either.",
                    func=_build)
    add_dataset_args(b)
    b.add_argument("--out", "-o", required=True, help="graph file to write: .json, or .safetensors (compact)")
    writes(b, kinds={"out": "graph"}, pair=GRAPH_PAIR, reads=DATASET_INPUTS)
    b.add_argument("--compact", action="store_true",
                   help="also write the compact form next to a JSON --out (same name, .safetensors)")
    b.add_argument("--progress", action="store_true", help="show a progress bar while streaming a plans file")
    b.add_argument("--no-fit", action="store_true",
                   help="skip fitting the history scorer's prior strength (cross-validation on training plans)")
    b.add_argument("--json", action="store_true", help="machine-readable output")

    i = add_command(gsub, "import", "convert an official KEPP P²KG pickle (networkx DiGraph) to a graph file",
                    "  kepp graph import PKG/graphs/CrossTaskHow/out_edge_N_graph/trained_graph.pkl --out runs/ct/graph.json\n"
                    "  kepp graph import trained_graph.pkl --out graph.json --dataset official-list --root train_list.json\n"
                    "\nThe pickle is read with an allow-list (networkx DiGraph and its views, dict): any other global\n"
                    "is refused, with its name, before anything runs. Raw-count and out-edge-normalised weights are\n"
                    "recognised; with --dataset/--root action id i is the dataset's action i (default: labels '0'..'N').",
                    func=_import)
    i.add_argument("pickle", help="official graph pickle (.pkl)")
    i.add_argument("--out", "-o", required=True, help="graph file to write: .json, or .safetensors (compact)")
    writes(i, kinds={"out": "graph"}, pair=GRAPH_PAIR, reads=("pickle", "root"))
    i.add_argument("--dataset", default=None, help="dataset format whose vocabulary the action ids index")
    i.add_argument("--root", default=None, help="the dataset (with --dataset)")
    i.add_argument("--json", action="store_true", help="machine-readable output")

    q = add_command(gsub, "paths", "top-R recommended paths of T steps between two actions",
                    f"  kepp graph paths {COIN} --start 'jack up the car' --goal 'put on the tire' --horizon 4\n"
                    f"  kepp graph paths --graph runs/coin/graph.json --start 12 --goal 15 -T 5 --top 3 "
                    f"--scorer history --json",
                    func=_paths)
    _graph_source(q)
    q.add_argument("--start", required=True, help="first action a_1 (label or index)")
    q.add_argument("--goal", required=True, help="last action a_T (label or index)")
    q.add_argument("--horizon", "-T", type=int, default=3, help="number of steps T of each path")
    q.add_argument("--top", "-R", type=int, default=5, help="number of paths R")
    q.add_argument("--scorer", dest="scorer", default="p2kg", choices=scorers,
                   help="path scorer: how the graph ranks paths")
    q.add_argument("--json", action="store_true", help="machine-readable output")

    s = add_command(gsub, "subgraph", "edges around one action up to a depth (in- and out-edges)",
                    f"  kepp graph subgraph {COIN} --action 'jack up the car' --depth 2 --min-prob 0.1\n"
                    f"  kepp graph subgraph --graph runs/coin/graph.json --action 3 --task 12 --json",
                    func=_subgraph)
    _graph_source(s)
    s.add_argument("--action", required=True, help="centre action (label or index)")
    s.add_argument("--depth", type=int, default=2, help="hops along in- or out-edges")
    s.add_argument("--min-prob", type=float, default=0.0, help="drop edges with a lower P²KG probability")
    s.add_argument("--task", default=None, help="keep only actions used by this task's training plans")
    s.add_argument("--json", action="store_true", help="machine-readable output")

    z = add_command(gsub, "zero-shot", "plan every test episode with the top path between its endpoints",
                    f"  kepp graph zero-shot {COIN} --horizon 3\n"
                    f"  kepp graph zero-shot {COIN} --horizon 3 4 5 6 --scorer p2kg pkg history\n"
                    f"  kepp graph zero-shot {NIV} -T 4 --endpoints runs/niv/endpoints_T4.jsonl --json\n"
                    "\nendpoints file (JSONL): {\"episode\": \"task/video/first:T\", \"start\": label|index, "
                    "\"goal\": label|index}",
                    func=_zero_shot)
    _graph_source(z)
    z.add_argument("--horizon", "-T", type=int, nargs="+", default=[3], help="horizon(s) T")
    z.add_argument("--endpoints", default="gt",
                   help="'gt' (ground-truth a_1, a_T) or a JSONL file of predicted endpoints")
    z.add_argument("--scorer", dest="scorer", nargs="+", default=["p2kg"], choices=scorers,
                   help="path scorer(s)")
    z.add_argument("--tie-break", default="smaller", choices=["smaller", "larger"],
                   help="equal scores: lexicographically smaller (project convention) or larger index sequence first")
    z.add_argument("--json", action="store_true", help="machine-readable output")


def _graph_source(p) -> None:
    add_dataset_args(p)
    p.add_argument("--graph", default=None,
                   help="graph JSON from 'kepp graph build' (default: build from the dataset's training plans)")


def _load(args, need_dataset: bool = False):
    """The graph (and the dataset when needed or when no graph file is given)."""
    from kepp_core.graph import build_graph, load_graph

    dataset = None
    if args.graph is None or need_dataset or args.root is not None:
        dataset = dataset_from_args(args)
    if args.graph is not None:
        return load_graph(args.graph, dataset), dataset
    return build_graph(dataset), dataset


def _build(args) -> int:
    from pathlib import Path

    from kepp_core.graph import build_graph, fit_prior
    from kepp_core.graph.build import COMPACT_SUFFIX
    from kepp_core.graph.stream import stream_graph

    check_outputs(args.out, Path(args.out).with_suffix(COMPACT_SUFFIX) if args.compact else None)
    if args.dataset == "plans" and args.root is not None:  # stream: the same graph in bounded memory
        g = stream_graph(args.root, seed=args.split_seed, progress=args.progress and not args.json)
    else:
        g = build_graph(dataset_from_args(args))
    g.source = {"built_from": str(args.root) if args.root is not None else "the demo world", "dataset": args.dataset}
    cv = None
    if not args.no_fit:
        cv = fit_prior(g)
        g.params["history_prior"] = cv["prior"]
        g.params["history_cv_sr"] = cv["cv_sr"]
    files = [str(args.out)]
    pair = None
    if args.compact and not has_suffix(args.out, COMPACT_SUFFIX):
        files.append(str(Path(args.out).with_suffix(COMPACT_SUFFIX)))
        pair = uuid.uuid4().hex  # one build id in both files: a stop between the renames is caught at load
    g.save(args.out, (pair, Path(files[-1]).name) if pair else None)
    if pair:
        g.save(files[-1], (pair, Path(args.out).name))
    c = g.counts
    summary = {"file": " + ".join(files), "dataset": g.dataset, "actions": g.num_actions, "edges": g.num_edges,
               "self_loops": int((c.indices == c.rows()).sum()),
               "plans": sum(t.videos for t in g.tasks.values()),
               "distinct_plans": sum(len(t.distinct) for t in g.tasks.values()), "tasks": len(g.tasks),
               "history_prior": g.params.get("history_prior")}
    if args.json:
        emit_json({**summary, "history_cv_sr": cv["cv_sr"] if cv else None})
        return 0
    print_table([{"field": k, "value": v} for k, v in summary.items()], title="procedure graph")
    return 0


def _import(args) -> int:
    from kepp_core.graph.build import graph_source
    from kepp_core.graph.official import import_graph_pickle

    check_outputs(args.out)
    dataset = None
    if args.dataset is not None or args.root is not None:
        if args.dataset is None or args.root is None:
            raise KeppError("--dataset and --root go together (the dataset whose actions the ids index)")
        args.features, args.split_seed, args.coin_actions = None, 0, "steps"
        dataset = dataset_from_args(args)
    g = import_graph_pickle(args.pickle, dataset)
    g.save(args.out)
    summary = {"file": str(args.out), "source": graph_source(g), "dataset": g.dataset, "actions": g.num_actions,
               "edges": g.num_edges, "self_loops": int((g.counts.indices == g.counts.rows()).sum())}
    if args.json:
        emit_json(summary)
        return 0
    print_table([{"field": k, "value": v} for k, v in summary.items()], title="imported procedure graph")
    return 0


def _paths(args) -> int:
    from kepp_core.graph import retrieve

    g, _ = _load(args)
    rec = retrieve(g, args.start, args.goal, args.horizon, args.top, args.scorer)
    if args.json:
        emit_json(rec.to_json(g.actions))
        return 0
    note = " (no path: fallback variations)" if rec.fallback else (
        f" (only {rec.found} distinct, repeated in rank order)" if rec.found < args.top else "")
    print_table([{"rank": k + 1, "score": f"{s:.6g}", "path": " → ".join(g.actions[a] for a in p)}
                 for k, (p, s) in enumerate(zip(rec.paths, rec.scores))],
                title=f"{rec.scorer}: {g.actions[rec.start]} → {g.actions[rec.goal]}, T={rec.horizon}{note}")
    return 0


def _subgraph(args) -> int:
    from kepp_core.graph import subgraph

    if not 0.0 <= args.min_prob <= 1.0:
        raise KeppError(f"--min-prob {args.min_prob}: expected a probability in [0, 1]")
    g, _ = _load(args)
    sg = subgraph(g, args.action, args.depth, args.min_prob, args.task)
    if args.json:
        emit_json(sg.to_json(g.actions))
        return 0
    print_table([{"from": g.actions[e.source], "to": g.actions[e.target], "count": e.count,
                  "probability": e.probability} for e in sg.edges],
                title=f"sub-graph around {g.actions[sg.centre]!r}: {len(sg.nodes)} actions, "
                      f"{len(sg.edges)} edges (depth {args.depth})")
    return 0


def _zero_shot(args) -> int:
    from kepp_core.evaluation.zeroshot import read_endpoints, zero_shot
    from kepp_core.graph import Retriever

    g, ds = _load(args, need_dataset=True)
    endpoints = None if args.endpoints == "gt" else read_endpoints(args.endpoints, g)
    rows, results = [], []
    for scorer in args.scorer:
        retriever = Retriever(g, scorer, R=1, tie_break=args.tie_break)
        for t in args.horizon:
            if t < 2:
                raise KeppError(f"horizon T={t} is too short (expected T >= 2)")
            res = zero_shot(ds, g, t, scorer, endpoints, retriever=retriever, progress=not args.json)
            rows.append(res.row())
            results.append(res)
    if args.json:
        emit_json([{**r.row(), "metrics": r.metrics} for r in results])
        return 0
    print_table(rows, title=f"zero-shot planning on {ds.name} (top path, {args.endpoints} endpoints)")
    return 0
