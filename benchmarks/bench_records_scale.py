"""Records at the field's scale: a paper's comparison of 12 methods read, judged and browsed.

Writes records in the unified benchmark's shape (CrossTask-133: 4,531 / 3,786 / 3,104 / 2,499 test
episodes at T = 3 / 4 / 5 / 6, 133 actions, 18 tasks; 5 seeds), 12 methods of different accuracy:
8 of this package's in one records file per seed (``run-s<seed>.jsonl``, every record with the step
model's endpoints and two graph paths, as ``kepp eval --records`` writes them) and 4 imported ones
in one file per method, seed and T (``<method>-s<seed>-T<T>.jsonl``, as ``kepp records import``
writes them), about 835,000 method-episode rows at ``--scale 1``, with a plans-JSONL dataset of the
same vocabulary for the app. Then it measures, with the machine's load beside each figure:

- the floor: ``pyarrow.json.read_json`` of the same JSONL files;
- reading and judging (:func:`kepp_core.api.read_predictions`) cold (no cache: every file validated,
  judged and cached) and warm (the cache read, in a fresh process), and both again beside one
  CPU-bound process;
- the method x T table (:func:`kepp_core.api.method_horizon_table`) and the metrics table for each
  evaluation code, and A vs B over every seed and T (:func:`kepp_core.api.compare_methods`), warm;
  ``kepp eval compare`` of two methods over the folder, end to end;
- with ``--app``: each records page of ``kepp app --predictions FOLDER`` in headless Chromium, address →
  drawn (``benchmarks/bench_app.py``'s readiness), cold (a fresh server, no cache) and warm (a new tab),
  and the server's peak RSS.

    python benchmarks/bench_records_scale.py --scale 0.05            # a proxy: about a minute
    python benchmarks/bench_records_scale.py --app                   # the full scale, the app's pages too
    python benchmarks/bench_records_scale.py --app --keep /tmp/scale  # keep the files written

Prints a table (seconds, MiB) with the targets (docs/at-scale.md) beside them; no assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

SIZES = {3: 4531, 4: 3786, 5: 3104, 6: 2499}  # CrossTask-133's test episodes per T (the unified split lists)
ACTIONS, TASKS, SEEDS = 133, 18, 5
# (method, share of steps wrong): this package's rows (the KEPP rows use the stored endpoints and paths) and four
# imported methods (names the catalogue does not know, as `kepp records import --method` requires)
OWN = [("random", 0.95), ("retrieval", 0.6), ("graph-pred", 0.45), ("pdpp", 0.4), ("kepp-nograph", 0.38),
       ("kepp-R1", 0.33), ("kepp-R2", 0.3), ("kepp-R2+dec", 0.28)]
IMPORTED = [("viterbiplannet", 0.27), ("mtid", 0.3), ("scheme", 0.34), ("skip-plan", 0.45)]
TARGETS = {"read + judge, cold": "≤ 3× floor", "read, warm (fresh process)": "≤ 1 s",
           "read, cold, one CPU-bound process beside": "≤ 3× idle", "read, warm, one CPU-bound process beside": "≤ 3× idle",
           "method x T table": "≤ 2 s", "metrics table": "≤ 2 s", "A vs B, 5 seeds x 4 T": "≤ 2 s",
           "page cold": "≤ 10 s", "page warm": "≤ 3 s", "app start": "", "app peak RSS (MiB)": "≤ 2048"}


# --- the records ------------------------------------------------------------------------------------------------
def world(out: Path, scale: float, rng: np.random.Generator) -> dict:
    """The dataset (``plans.jsonl`` beside the records folder ``out``: 18 tasks, 133 actions) and the test episodes
    per T: (task, video, first, plan)."""
    labels = [f"step {a} ({a % TASKS})" for a in range(ACTIONS)]
    task_actions = [[a for a in range(ACTIONS) if a % TASKS == t] for t in range(TASKS)]
    lines, episodes = [], {T: [] for T in SIZES}
    need = max(int(np.ceil(n * scale)) for n in SIZES.values())
    tests = max(need // 5, TASKS)
    for v in range(tests + 2 * tests):
        t = v % TASKS
        steps = [int(a) for a in rng.choice(task_actions[t], size=10)]
        split = "test" if v < tests else "train"
        lines.append({"video": f"v{v:05d}", "task": f"task{t:02d}", "split": split, "steps": [labels[a] for a in steps]})
        if split == "test":
            for T in SIZES:
                episodes[T] += [(f"task{t:02d}", f"v{v:05d}", i, steps[i:i + T]) for i in range(10 - T + 1)]
    with open(out.parent / "plans.jsonl", "w", encoding="utf-8") as f:  # beside the records folder, not in it
        f.writelines(json.dumps(line) + "\n" for line in lines)
    picked = {}
    for T, n in SIZES.items():
        eps = episodes[T]
        take = rng.choice(len(eps), size=min(len(eps), max(1, int(round(n * scale)))), replace=False)
        picked[T] = [eps[i] for i in sorted(take)]
    return {"labels": labels, "task_actions": task_actions, "episodes": picked}


def _noisy(truth: np.ndarray, wrong: float, tasks: np.ndarray, task_actions, rng) -> np.ndarray:
    miss = rng.random(truth.shape) < wrong
    pool = np.array([rng.choice(task_actions[t], size=truth.shape[1]) for t in tasks]) if len(tasks) else truth
    return np.where(miss, pool, truth)


def write_records(out: Path, w: dict, rng: np.random.Generator) -> list[Path]:
    """One records file per seed of the 8 own methods, one per imported method, seed and T."""
    files = []
    labels, task_actions = w["labels"], w["task_actions"]
    for seed in range(SEEDS):
        path = out / f"run-s{seed}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for T, eps in w["episodes"].items():
                truth = np.array([e[3] for e in eps])
                tasks = np.array([int(e[0][4:]) for e in eps])
                plans = {m: _noisy(truth, p, tasks, task_actions, rng).tolist() for m, p in OWN}
                right_ends = rng.random(len(eps)) < 0.6
                ends = np.where(right_ends[:, None], truth[:, [0, -1]], _noisy(truth[:, [0, -1]], 1.0, tasks, task_actions, rng))
                path2 = _noisy(truth, 0.2, tasks, task_actions, rng).tolist()
                for i, (task, video, first, gt) in enumerate(eps):
                    e = [int(x) for x in ends[i]]
                    rec = {"seed": seed, "T": T, "episode": f"{task}/{video}/{first}:{T}", "video": video, "task": task,
                           "setting": "conventional", "first": first, "start_time": 3.0 * first, "goal_time": 3.0 * (first + T),
                           "gt": gt, "gt_labels": [labels[a] for a in gt], "endpoints": e,
                           "endpoint_labels": [labels[a] for a in e], "endpoint_scores": [0.71, 0.64],
                           "paths": [[e[0], *gt[1:-1], e[1]], [e[0], *path2[i][1:-1], e[1]]], "path_scores": [0.4, 0.2],
                           "plans": {m: plans[m][i] for m, _ in OWN},
                           "success": {m: int(plans[m][i] == gt) for m, _ in OWN},
                           "acc": {m: sum(a == b for a, b in zip(plans[m][i], gt)) / T for m, _ in OWN}}
                    f.write(json.dumps(rec) + "\n")
        files.append(path)
    for method, wrong in IMPORTED:
        for seed in range(SEEDS):
            for T, eps in w["episodes"].items():
                truth = np.array([e[3] for e in eps])
                plans = _noisy(truth, wrong, np.array([int(e[0][4:]) for e in eps]), task_actions, rng).tolist()
                path = out / f"{method}-s{seed}-T{T}.jsonl"
                source = f"{method}_seed{seed}_T{T}_predictions.json"
                with open(path, "w", encoding="utf-8") as f:
                    for (task, video, first, gt), plan in zip(eps, plans):
                        f.write(json.dumps({"seed": seed, "T": T, "episode": f"{task}/{video}/{first}:{T}", "video": video,
                                            "task": task, "gt": gt, "plans": {method: plan},
                                            "success": {method: int(plan == gt)},
                                            "acc": {method: sum(a == b for a, b in zip(plan, gt)) / T},
                                            "imported": {method: source}}) + "\n")
                files.append(path)
    return files


# --- measuring -----------------------------------------------------------------------------------------------------
def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def floor(files: list[Path], block_size: int | None = 32 << 20) -> float:
    """``pyarrow.json.read_json`` of every file, one after another (best of two; the files in the page cache):
    with the 32 MiB blocks the store reads with (a line may be 16 MiB), or with ``block_size=None`` pyarrow's
    defaults (1 MiB blocks, parsed on every core: the stricter floor, for records whose lines are short)."""
    import pyarrow as pa
    import pyarrow.json as pj

    options = pj.ReadOptions() if block_size is None else pj.ReadOptions(block_size=block_size)

    def once():
        for f in files:
            pj.read_json(str(f), read_options=options)
    pa.default_memory_pool()
    return min(timed(once)[0] for _ in range(2))


def child(phase: str, folder: Path, home: Path) -> dict:
    """One measurement in a fresh Python process (``--phase``): its figures and its peak RSS."""
    env = {**os.environ, "KEPP_HOME": str(home), "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, __file__, "--phase", phase, "--folder", str(folder)], env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"phase {phase} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def phase(name: str, folder: Path) -> dict:
    """What ``--phase NAME`` measures, in this process."""
    import resource

    from kepp_core import api
    from kepp_core.evaluation.store import folder_records

    files, skipped = folder_records(folder) if name != "read" else (None, None)
    res: dict = {}
    if name == "read":  # cold or warm, as the cache stands: the folder's files found, read, judged, as one table
        import pandas  # noqa: F401 -- loaded before the clock starts, as in the app and any script using the table
        t, (files, skipped) = timed(lambda: folder_records(folder))
        t2, preds = timed(lambda: api.read_predictions(files))
        res.update(read=t + t2, store=t, frame=t2, rows=len(preds), skipped=len(skipped))
    elif name == "tables":
        preds = api.read_predictions(files)
        for code in ("kepp", "pdpp", "vpn"):
            res[f"table {code}"] = timed(lambda code=code: api.method_horizon_table(preds, code))[0]
            res[f"metrics {code}"] = timed(lambda code=code: api.metrics_table(preds, code))[0]
        a, b = "kepp-R2", "viterbiplannet"
        res["ab"] = timed(lambda: [api.compare_methods(preds, a, b, T) for T in SIZES])[0]
    res["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return res


def busy():
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def measure_app(folder: Path, home: Path, results: dict) -> None:
    """Each records page of ``kepp app`` on the records, cold (a fresh server, empty cache) and warm (a new tab)."""
    from bench_app import CHROMIUM_ARGS, NEW_TABS, ready, wait_health
    from playwright.sync_api import sync_playwright

    from kepp_core.api import AppConfig
    from app.commands import start_app
    from kepp_core.api.serving import free_port

    pages = [p for p in NEW_TABS if p[0] in ("Results", "Failure cases", "Heatmaps", "Playlists", "Presenter")]
    port = free_port()
    url = f"http://localhost:{port}"
    os.environ["KEPP_HOME"] = str(home)
    shutil.rmtree(home / "records", ignore_errors=True)  # cold: `kepp app` reads and caches the records as it starts
    t0 = time.perf_counter()
    proc = start_app(AppConfig(dataset="plans", root=str(folder.parent / "plans.jsonl"), predictions=str(folder),
                               port=port))
    try:
        wait_health(url, proc, timeout=600)
        results["app start, cold cache (records validated, judged, cached)"] = [time.perf_counter() - t0]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            ctx = browser.new_context(viewport={"width": 1280, "height": 800})
            for k, label in enumerate(("cold", "warm", "warm")):
                for name, path, selector in pages:
                    tab = ctx.new_page()
                    t = time.perf_counter()
                    tab.goto(f"{url}/{path}")
                    try:
                        ready(tab, selector if name not in ("Playlists", "Presenter") else "h1", timeout=600_000)
                    except Exception as e:  # noqa: BLE001 -- a page that never draws is a figure too
                        results.setdefault(f"page {label}: {name}", []).append(float("nan"))
                        print(f"{name}: not drawn ({type(e).__name__})")
                        tab.close()
                        continue
                    results.setdefault(f"page {label}: {name}", []).append(time.perf_counter() - t)
                    tab.close()
                if k == 0:
                    print(f"  pages cold done (load {load()})")
            browser.close()
        status = Path(f"/proc/{proc.pid}/status").read_text()
        hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
        results["app peak RSS (MiB)"] = [hwm / 1024]
    finally:
        proc.kill()  # a benchmark's server: nothing to save
        proc.wait()


def report(results: dict) -> None:
    """The figures (median of the runs) with the targets beside them, and the load now."""
    print(f"\nfigures (median of the runs; load now {load()}):")
    for name, values in results.items():
        target = next((t for k, t in TARGETS.items() if name.startswith(k)), "")
        print(f"  {name:<60} {float(np.median(values)):9.2f}   {target}")
    if "floor: pyarrow.json.read_json" in results:
        fl, cold = results["floor: pyarrow.json.read_json"][0], results["read + judge, cold"][0]
        warm = float(np.median(results["read, warm (fresh process)"]))
        strict = results["floor, pyarrow's defaults (1 MiB blocks, every core)"][0]
        print(f"read + judge cold / floor: {cold / fl:.2f}× (/ pyarrow's defaults: {cold / strict:.2f}×); beside one CPU-bound process / idle: cold "
              f"{results['read, cold, one CPU-bound process beside'][0] / cold:.2f}×, "
              f"warm {results['read, warm, one CPU-bound process beside'][0] / warm:.2f}×")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="share of the benchmark's episodes (1: 835,200 rows)")
    ap.add_argument("--app", action="store_true", help="also each records page in headless Chromium")
    ap.add_argument("--keep", default=None, metavar="FOLDER", help="write the records (FOLDER/records) and the dataset "
                    "(FOLDER/plans.jsonl) here and keep them")
    ap.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--folder", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, Path(args.folder))))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="kepp-scale-"))
    folder = (Path(args.keep) if args.keep else tmp) / "records"
    folder.mkdir(parents=True, exist_ok=True)
    home = tmp / "home"
    rng = np.random.default_rng(46)
    try:
        t, w = timed(lambda: world(folder, args.scale, rng))
        t2, files = timed(lambda: write_records(folder, w, rng))
        rows = SEEDS * sum(len(e) for e in w["episodes"].values()) * (len(OWN) + len(IMPORTED))
        size = sum(f.stat().st_size for f in files)
        print(f"wrote {len(files)} files, {size / 2**20:.0f} MiB, {rows:,} method-episode rows "
              f"(scale {args.scale:g}) in {t + t2:.1f} s; load {load()}; {os.cpu_count()} CPUs")
        results: dict[str, list] = {}
        results["floor: pyarrow.json.read_json"] = [floor(files)]
        results["floor, pyarrow's defaults (1 MiB blocks, every core)"] = [floor(files, None)]
        cold = child("read", folder, home)
        results["read + judge, cold"] = [cold["read"]]
        results["  of which store (validate, judge, cache)"] = [cold["store"]]
        results["  of which predictions table"] = [cold["frame"]]
        results["read, cold, peak RSS (MiB)"] = [cold["rss_mib"]]
        warm = [child("read", folder, home) for _ in range(3)]
        results["read, warm (fresh process)"] = [w_["read"] for w_ in warm]
        results["  of which store (the cache, memory-mapped)"] = [w_["store"] for w_ in warm]
        results["  of which predictions table "] = [w_["frame"] for w_ in warm]
        results["read, warm, peak RSS (MiB)"] = [max(w_["rss_mib"] for w_ in warm)]
        tables = child("tables", folder, home)
        for code in ("kepp", "pdpp", "vpn"):
            results[f"method x T table ({code})"] = [tables[f"table {code}"]]
            results[f"metrics table ({code})"] = [tables[f"metrics {code}"]]
        results["A vs B, 5 seeds x 4 T"] = [tables["ab"]]
        env = {**os.environ, "KEPP_HOME": str(home), "PYTHONPATH": str(REPO)}
        t, out = timed(lambda: subprocess.run([sys.executable, "-m", "kepp_core", "eval", "compare", str(folder), "--a",
                                               "kepp-R2", "--b", "viterbiplannet"], env=env, capture_output=True,
                                              text=True, check=False))
        if out.returncode:
            print(f"kepp eval compare failed: {out.stderr.strip()[-500:]}")
        results["kepp eval compare (end to end, warm cache)"] = [t]
        hog = busy()
        try:
            time.sleep(1.0)
            print(f"one CPU-bound process beside (pid {hog.pid}); load {load()}")
            shutil.rmtree(home / "records", ignore_errors=True)
            results["read, cold, one CPU-bound process beside"] = [child("read", folder, home)["read"]]
            results["read, warm, one CPU-bound process beside"] = [child("read", folder, home)["read"]]
        finally:
            hog.terminate()
            hog.wait()
        report(results)
        if args.app:
            app: dict[str, list] = {}
            measure_app(folder, home, app)
            report(app)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
