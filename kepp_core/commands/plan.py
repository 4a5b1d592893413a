"""``kepp plan``: plan the steps between a start clip and a goal clip of one video (or of its
per-second features) with a models folder, the way the app's Plan page does (docs, Models and
training: planning from a video)."""

from __future__ import annotations

import math
from pathlib import Path

from kepp_core.commands._common import (add_command, add_dataset_args, add_device_option, dataset_from_args, emit_json,
                                        set_threads)
from kepp_core.data.records import MAX_VIDEO_SECONDS
from kepp_core.errors import KeppError
from kepp_core.paths import DEMO_ASSETS
from kepp_core.io import has_suffix

EXAMPLES = """  kepp plan video.mp4 --start 2 6 --goal 20 24 -T 4 --models assets/demo
  kepp plan video.mp4 --start 2 6 --goal 20 24 -T 4 --models assets/demo --json
  kepp plan features/tea_0001.npy --start 2 6 --goal 20 24 -T 3 --raw
  kepp plan video.mp4 --start 2 6 --goal 20 24 -T 4 --models models --planning-model graph-R2 --save-decoding
  kepp plan video.mp4 --start 2 6 --goal 20 24 -T 4 --models models --choose-planning-model
  kepp plan my_video.mp4 --start 5 8 --goal 41 44 -T 3 --models models/official --encoder s3d:s3d/s3d_howto100m.pth
  kepp plan my_video.mp4 --start 5 8 --goal 41 44 -T 3 --planning-model graph-text --encoder s3d:s3d/s3d_howto100m.pth \\
      --dataset crosstask --root data/crosstask_release
  (graph-text: no trained model; the P²KG of the dataset's training plans between the steps the S3D text
   tower grounds in the two clips, its temperature fitted on the dataset's training episodes where its
   features are that network's: the graph-text row of kepp eval on two clips)
  (a video is decoded with decord and encoded with the models' feature encoder; a .npy file holds its
   per-second features [seconds, D]; the clips are seconds from the start of the video; --dataset / --root
   name the dataset the models were trained on, read only to choose a missing decoding on its validation videos)"""

FEATURE_SUFFIXES = (".npy",)  # per-second feature files (kepp_core.data.load_features)


def register(sub) -> None:
    """Add ``kepp plan``."""
    p = add_command(sub, "plan", "plan the steps between two clips of a video (or of its features file)",
                    EXAMPLES, _plan)
    p.add_argument("video", metavar="VIDEO", help="a video file, or its per-second features (.npy)")
    p.add_argument("--start", nargs=2, type=float, metavar=("S", "E"), required=True,
                   help="the start clip: seconds S to E of the video")
    p.add_argument("--goal", nargs=2, type=float, metavar=("S", "E"), required=True,
                   help="the goal clip: seconds S to E, after the start clip")
    p.add_argument("-T", "--horizon", type=int, default=4, help="number of steps to plan")
    p.add_argument("--models", default=None,
                   help="models folder (MODELS/T<h>/step, plan-graph-R1, ...) (default: the shipped demo models, "
                        "assets/demo)")
    p.add_argument("--planning-model", default=None, metavar="ID",
                   help="the planning model MODELS/T<h>/plan-ID: graph-R1, graph-R2, graph-R1-struct or none; or "
                        "graph-text: graph + text endpoints, no model (needs --encoder s3d:PATH; the graph and the "
                        "text tower's temperature come from --dataset/--root) (default: the one chosen on "
                        "validation episodes and stored in MODELS/T<h>/planner.json, else graph-R1)")
    p.add_argument("--choose-planning-model", action="store_true",
                   help="choose the planning model on the validation episodes of the dataset the models were "
                        "trained on (the best validation SR, each decoded as its graph decoding choice) and store "
                        "it in MODELS/T<h>/planner.json (with the decoding choices in decoding.json): every later "
                        "plan, the Plan page and kepp demo default to it")
    p.add_argument("-R", "--paths", type=int, default=None,
                   help="graph paths recommended to the planning model (default: the R it was trained with)")
    p.add_argument("--raw", action="store_true",
                   help="the planning model's own argmax plan, without graph decoding")
    p.add_argument("--save-decoding", action="store_true",
                   help="store a decoding choice made now in MODELS/T<h>/decoding.json, not in KEPP's "
                        "cache home (the models folder is never written otherwise)")
    p.add_argument("--encoder", default=None, metavar="SPEC",
                   help="feature encoder of a video: builtin, s3d:PATH (the S3D features of the official "
                        "models), module:function or a TorchScript file (default: the models' own, the built-in one "
                        "for the demo)")
    p.add_argument("--top", type=int, default=5, help="most probable first and last steps shown")
    p.add_argument("--seed", type=int, default=0, help="sampling seed of the step and planning models")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: $KEPP_THREADS or half the cores)")
    add_device_option(p)
    p.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    add_dataset_args(p)  # the dataset the models were trained on: chooses a missing decoding on its validation videos


def _plan(args) -> int:
    from kepp_core import api
    from kepp_core.catalog import parse_planner_id, plan_model_id
    from kepp_core.catalog.roles import DEFAULT_PLANNING_MODEL

    set_threads(args)
    source = Path(args.video)
    _check_request(args, source)
    chosen = None  # the models folder's stored planning-model choice, where it decides
    role = parse_planner_id(args.planning_model) if args.planning_model is not None else DEFAULT_PLANNING_MODEL
    if args.choose_planning_model and (args.planning_model is not None or args.models is None):
        raise KeppError("--choose-planning-model chooses among the planning models of --models and stores the "
                        "choice there: name the models folder with --models and leave out --planning-model")
    if role is None:  # graph + text endpoints: no models folder
        models, planner = None, _text_planner(args)
    else:
        models = Path(args.models) if args.models else DEMO_ASSETS
        if not models.is_dir():
            raise KeppError(f"{models}: models folder not found (--models; train one with 'kepp train all')")
        if args.planning_model is None:
            chosen = _planning_model(args, models)
            role = chosen.role
        dataset = (lambda: dataset_from_args(args)) if _dataset_given(args, models, role) else None
        planner = api.load_planner(models, args.horizon, role, dataset=dataset, decode=not args.raw,
                                   save_decoding=args.save_decoding)
        planner.seed = args.seed
    video = not has_suffix(source, *FEATURE_SUFFIXES)
    if video:  # encoded with the models' encoder (or --encoder), once its width is known to fit
        name = planner.plan_spec.encoder
        spec = api.encoder_spec(name, (args.encoder,) if args.encoder else ()) if name else (args.encoder or "builtin")
        planner.check_encoder(spec, "" if name or args.encoder else
                              " (the default: the models record no encoder; name theirs with --encoder, "
                              "e.g. s3d:PATH for models imported from the official code)")
    features, duration = _features(source)
    for name, (a, b) in (("--start", args.start), ("--goal", args.goal)):
        if a < 0 or b > duration + 1e-6:
            raise KeppError(f"{name} {a:g} {b:g}: outside the video {source.name} ({duration:.1f} s long): "
                            f"choose seconds from 0 to {duration:.1f}")
    if video:
        features = lambda: api.encode_clip_video(source, spec)  # noqa: E731
    result, _, _ = api.plan_clips(planner, features, args.start, args.goal, args.horizon, args.paths)
    shown = chosen is not None and chosen.kept_in is not None  # a stored choice: said beside the plan
    out = {"video": str(source), "models": None if models is None else str(models),
           "planning_model": args.planning_model or plan_model_id(role),
           **({"planning_model_choice": {**chosen.to_json(), "text": chosen.describe()}} if shown else {}),
           "start": list(args.start), "goal": list(args.goal), "duration": round(duration, 3),
           **result.to_json(), "endpoint_top": result.endpoint_top(args.top)}
    if args.json:
        emit_json(out)
    else:
        _print(out, result)
    return 0


def _planning_model(args, models: Path):
    """The planning model of ``models`` for this horizon when none is named: chosen now on validation
    episodes and stored (``--choose-planning-model``), else the stored choice or the default
    (:mod:`kepp_core.evaluation.planning_model`)."""
    from kepp_core.catalog import model_folder, models_dir
    from kepp_core.evaluation.planning_model import candidates, choose_planning_model, stored_planning_model
    from kepp_core.models.spec import load_spec

    hdir = models_dir(models, args.horizon)
    if not args.choose_planning_model:
        return stored_planning_model(hdir)
    roles = candidates(hdir)  # the planning models of one folder observe as its step model does: one setting
    spec = load_spec(hdir / model_folder(roles[0])) if roles else None
    kw = {"setting": spec.setting, "m": spec.m} if spec is not None else {}
    return choose_planning_model(hdir, lambda: dataset_from_args(args), **kw)


def _check_request(args, source: Path) -> None:
    """One clear error for what can be checked before loading anything."""
    if not source.exists():
        raise KeppError(f"{source}: file not found (VIDEO: a video file or a .npy features file)")
    if not source.is_file():
        raise KeppError(f"{source}: not a file (VIDEO: a video file or a .npy features file)")
    for name, (a, b) in (("--start", args.start), ("--goal", args.goal)):
        if not (math.isfinite(a) and math.isfinite(b) and 0 <= a < b <= MAX_VIDEO_SECONDS):
            raise KeppError(f"{name} {a:g} {b:g}: a clip is seconds S to E with 0 <= S < E <= "
                            f"{MAX_VIDEO_SECONDS:g}")
    if args.goal[0] < args.start[1]:
        raise KeppError(f"--goal starts at {args.goal[0]:g} s, before --start ends ({args.start[1]:g} s): "
                        "the goal clip must come after the start clip, without overlapping it")


def _text_planner(args):
    """Graph + text endpoints (``--planning-model graph-text``): the P²KG of the dataset's training plans
    and the S3D text tower of ``--encoder`` (which must name one), checked before any video is decoded."""
    from kepp_core import api
    from kepp_core.catalog import TEXT_PLANNER
    from kepp_core.graph.build import build_graph
    from kepp_core.video.s3d_spec import is_s3d

    if not is_s3d(args.encoder):
        raise KeppError(f"--planning-model {TEXT_PLANNER} plans between the steps the S3D text tower grounds in "
                        f"the clips: give its network with --encoder s3d:PATH (got "
                        f"{'no --encoder' if args.encoder is None else repr(args.encoder)})")
    given = [name for name, on in (("--models", args.models is not None), ("--save-decoding", args.save_decoding)) if on]
    if given:
        raise KeppError(f"{' / '.join(given)}: --planning-model {TEXT_PLANNER} uses no trained model and no decoding "
                        "choice (leave them out, or name a planning model of the models folder)")
    ds = dataset_from_args(args)
    return api.text_planner(args.encoder, build_graph(ds), ds, args.horizon)


def _dataset_given(args, models: Path, role) -> bool:
    """Whether the dataset arguments name the dataset the models were trained on (to choose a missing
    decoding on its validation videos): given with --root or --dataset, or the default demo world,
    except for models imported from the official code (never trained on it)."""
    from kepp_core.catalog import model_folder, models_dir
    from kepp_core.models.official import imported_from
    from kepp_core.models.spec import load_spec

    if args.root is not None or args.dataset != "demo":
        return True
    folder = models_dir(models, args.horizon) / model_folder(role)
    return not (folder.is_dir() and imported_from(dict(load_spec(folder).config)))


def _features(source: Path):
    """The per-second features of a features file (None for a video: encoded once the planner and
    its encoder are known) and the duration of ``source`` in seconds; a file that is neither
    raises a KeppError naming it."""
    from kepp_core import api
    from kepp_core.data import load_features

    if has_suffix(source, *FEATURE_SUFFIXES):
        feats = load_features(source)
        return feats, float(len(feats))
    return None, float(api.video_meta(source)["duration"])


def _print(out: dict, result) -> None:
    """The plan, its decoding, the endpoint probabilities, the graph paths and the per-step scores."""
    from kepp_core.catalog import endpoint_source
    from kepp_core.commands._common import print_table

    dec = out["decoding"]
    if result.no_path:
        first, last = result.endpoint_labels
        print(f"no path (T={out['horizon']}): the graph has no path of {out['horizon']} steps from {first!r} to "
              f"{last!r}, so graph + text endpoints makes no plan")
        print("the graph's fallback variation (not a plan): " + " → ".join(out["plan_labels"]))
    else:
        print(f"plan (T={out['horizon']}): " + " → ".join(out["plan_labels"]))
    if dec:
        print("before decoding: " + " → ".join(out["raw_plan_labels"]))
    if "planning_model_choice" in out:
        print(out["planning_model_choice"]["text"])
    if not result.no_path:  # no plan: nothing was decoded, and the retriever's paths are its fallback
        print(result.decoding_text + (f" Choice kept in {dec['source']}." if dec else ""))
    for name in ("first", "last"):
        top = ", ".join(f"{e['label']} {e['probability']:.3f}" for e in out["endpoint_top"].get(name, []))
        print(f"{name} step ({endpoint_source(result.decoded_ends_from).words}): {top}")
    for k, p in enumerate(out["paths"] if not result.no_path else [], 1):
        print(f"graph path {k} (probability {p['probability']:.3f}): " + " → ".join(p["labels"]))
    title = ("the fallback variation's steps (not a plan): the graph's transition probability, the endpoint "
             "probability" if result.no_path else
             "why this plan: the model's score, the graph's transition probability, the endpoint probability")
    print_table([{**r, "changed": "yes" if r["changed"] else ""} for r in result.why],
                ["step", "label", "score", "transition", "endpoint", "raw_label", "changed"], title=title)
