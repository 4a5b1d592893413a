"""``kepp protocol SPEC.toml``: train what is missing over seeds, evaluate, and report mean ± 90% CI
and paired tests (:mod:`kepp_core.protocol`)."""

from __future__ import annotations

from kepp_core.commands._common import add_command

EXAMPLES = """  kepp protocol runs/graph.toml --threads 1
  kepp protocol runs/graph.toml --seeds 2 --out runs/graph-2seeds
  kepp protocol runs/graph.toml --train-fraction 0.25 0.5 1.0     # data-efficiency curves

  A spec (TOML):
    dataset = "demo"
    horizons = [3, 4]
    methods = ["random", "graph-gt", "kepp-nograph", "kepp-nograph+dec", "kepp-R1", "kepp-R1+dec"]
    seeds = 5
    preset = "demo"
    pairs = [["kepp-R1+dec", "kepp-nograph"]]
    out = "runs/protocol"
    [train]
    train_steps = 300"""


def register(sub) -> None:
    """Add ``kepp protocol``."""
    p = add_command(sub, "protocol", "train and evaluate methods over seeds: mean ± CI and paired tests",
                    EXAMPLES, _protocol)
    p.add_argument("spec", help="protocol spec (TOML)")
    p.add_argument("--out", default=None, help="output folder (overrides the spec's 'out')")
    p.add_argument("--seeds", type=int, default=None, help="number of seeds 0..N-1 (overrides the spec)")
    p.add_argument("--train-fraction", type=float, nargs="+", default=None, metavar="F",
                   help="fractions of the training videos (nested subsets; overrides the spec)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: $KEPP_THREADS or half the cores)")


def _protocol(args) -> int:
    from kepp_core.protocol import load_protocol, parse_spec, run_protocol  # lazy: keeps `kepp --help` fast
    from kepp_core.training.loop import set_cpu_threads  # lazy: keeps `kepp --help` fast

    set_cpu_threads(args.threads)
    spec = load_protocol(args.spec)
    over = {}
    if args.out is not None:
        over["out"] = args.out
    if args.seeds is not None:
        over["seeds"] = args.seeds
    if args.train_fraction is not None:
        over["train_fractions"] = args.train_fraction
    if over:
        from dataclasses import asdict  # lazy: only with overrides

        data = {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(spec).items() if v is not None}
        data["pairs"] = [list(p) for p in spec.pairs]
        spec = parse_spec({**data, **over}, args.spec)
    result = run_protocol(spec)
    print(f"\n{len(result['rows'])} rows in {result['seconds']:.0f}s → {spec.out}/results.md, results.json, "
          f"records.jsonl")
    return 0
