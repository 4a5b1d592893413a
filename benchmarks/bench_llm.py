"""LLM plan recommendations on the demo world, against a SCRIPTED local chat server.

No real LLM is involved: a scripted "textbook" server on 127.0.0.1 (tests/llm_server.py)
answers the paper's prompts from the demo world's *training* plans, in paraphrased and
varied formats, with occasional refusals and malformed replies. It measures the pipeline
around the LLM, not an LLM's knowledge:

1. mapping: top-1 accuracy of paraphrase -> dataset action, all-MiniLM-L6-v2 vs the
   lexical fallback, side by side, with time per text;
2. per horizon T=3..6 (ground-truth endpoints of the test episodes): how often the LLM
   plan is used or replaced by the fallback, SR/mAcc/mIoU of the recommendation against
   the ground truth next to the P²KG top-1 path, requests and time of a first run and of
   a rerun from the cache (which must send no request).

The plans are the demo world's (same generator, seed and 300 videos as
``kepp_core.data.synth``), without rendering videos.

    python benchmarks/bench_llm.py [--videos 300] [--seed 0]
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from llm_server import Scripted, ScriptedChatServer, is_verification, prompt_of  # noqa: E402

from kepp_core.data.episodes import make_episodes  # noqa: E402
from kepp_core.data.records import Dataset, Step, Task, Video, seeded_split, vocabulary_from  # noqa: E402
from kepp_core.data.synth.procedures import TASKS  # noqa: E402
from kepp_core.io import markdown_table  # noqa: E402
from kepp_core.llm import (ActionMapper, ChatClient, LexicalEmbedder, LLMConfig, LLMRecommender,  # noqa: E402
                           MiniLMEmbedder, parse_steps)

# Two paraphrases per demo-world step (what an LLM might write instead of the label).
PARAPHRASES = {
    "boil water": ["Bring the water to a boil", "Heat water in a kettle until boiling"],
    "pour water": ["Pour the hot water", "Fill it with water"],
    "add tea bag": ["Put a teabag in the cup", "Drop in the tea bag"],
    "steep tea": ["Let the tea steep for a few minutes", "Allow the tea to brew"],
    "remove tea bag": ["Take out the teabag", "Remove the bag of tea"],
    "add sugar": ["Put in some sugar", "Sweeten it with sugar"],
    "stir": ["Stir well", "Mix with a spoon"],
    "add milk": ["Pour in a splash of milk", "Add some milk"],
    "serve cup": ["Serve it in a cup", "Serve the drink in a mug"],
    "grind beans": ["Grind the coffee beans", "Mill the beans"],
    "add coffee": ["Put the ground coffee in the filter", "Add coffee grounds"],
    "cut lemon": ["Slice the lemons in half", "Cut the lemons"],
    "squeeze lemon": ["Squeeze the lemon juice out", "Juice the lemons"],
    "add ice": ["Add ice cubes", "Put some ice in"],
    "crack egg": ["Crack the eggs into a bowl", "Break an egg"],
    "add flour": ["Add the flour", "Sift in flour"],
    "whisk batter": ["Whisk the batter until smooth", "Beat the mixture with a whisk"],
    "heat pan": ["Heat up the frying pan", "Warm the skillet on the stove"],
    "add butter": ["Melt some butter in the pan", "Grease the pan with butter"],
    "pour batter": ["Pour the batter into the pan", "Ladle batter into the skillet"],
    "flip pancake": ["Flip the pancake over", "Turn the pancake with a spatula"],
    "serve plate": ["Serve on a plate", "Put the pancakes on a plate"],
    "fill pot": ["Fill the pot with potting mix", "Put soil into the flower pot"],
    "dig hole": ["Dig a small hole", "Make a hole in the soil"],
    "place seedling": ["Place the seedling in the hole", "Put the young plant in"],
    "add soil": ["Add more soil around it", "Cover the roots with soil"],
    "press soil": ["Press the soil down firmly", "Firm the soil with your hands"],
    "add fertilizer": ["Add some fertilizer", "Feed it with plant fertiliser"],
    "label pot": ["Label the pot", "Stick a label on the pot"],
    "place wedge": ["Put wheel wedges behind the tires", "Chock the wheels"],
    "loosen nuts": ["Loosen the lug nuts", "Slightly unscrew the wheel nuts"],
    "jack up car": ["Raise the vehicle with a jack", "Jack the car up"],
    "remove wheel": ["Take the wheel off", "Pull off the flat tire"],
    "mount wheel": ["Mount the spare tire", "Put the new wheel on"],
    "tighten nuts": ["Tighten the lug nuts", "Screw the wheel nuts tight"],
    "lower car": ["Lower the car back to the ground", "Let the jack down"],
    "check pressure": ["Check the tire pressure", "Measure the air pressure of the tyre"],
    "fill bucket": ["Fill a bucket with soapy water", "Prepare a bucket of water"],
    "spray cleaner": ["Spray the glass cleaner on the window", "Apply window cleaning spray"],
    "wipe glass": ["Wipe the glass with a cloth", "Wipe the window clean"],
    "scrape glass": ["Scrape the glass with a blade", "Use a scraper on the window"],
    "dry glass": ["Dry the glass with a towel", "Dry the window"],
}
PROMPT = re.compile(r"I know (\d+) steps are required, the first step is (.+?), and the last step is (.+?) "
                    r"and I need to go from")


def demo_plans(videos: int, seed: int) -> Dataset:
    """The demo world's plans (same sampling as kepp_core.data.synth.world), no videos."""
    actions = vocabulary_from(s for t in TASKS for s in t.steps)
    index = {a: i for i, a in enumerate(actions)}
    ids = [f"{TASKS[i % len(TASKS)].id}_{i:04d}" for i in range(videos)]
    split = seeded_split(ids, seed=seed)
    out = []
    for i in range(videos):
        task = TASKS[i % len(TASKS)]
        plan = task.procedure.sample(np.random.default_rng([seed, i, 1]))
        out.append(Video(f"{i:04d}", task.id, [Step(index[s]) for s in plan], split[ids[i]]))
    tasks = {t.id: Task(t.id, t.name, tuple(t.steps)) for t in TASKS}
    return Dataset("demo-plans", actions, tasks, out)


class TextbookServer:
    """Answers from training windows (frequency-weighted), paraphrased; a few bad replies."""

    def __init__(self, ds: Dataset) -> None:
        self.labels = ds.actions
        self.windows: dict[tuple[str, str, int], Counter] = {}
        for plan in ds.plans("train"):
            for t in range(3, 7):
                for i in range(len(plan) - t + 1):
                    w = tuple(ds.actions[a] for a in plan[i:i + t])
                    self.windows.setdefault((w[0], w[-1], t), Counter())[w] += 1
        self.inverse = {p.lower(): label for label, ps in PARAPHRASES.items() for p in ps}
        self.inverse.update({label: label for label in PARAPHRASES})
        self.task_steps = {s: t.steps for t in TASKS for s in t.steps}

    def rng(self, *parts) -> np.random.Generator:
        return np.random.default_rng(int(hashlib.sha1(repr(parts).encode()).hexdigest()[:12], 16))

    def __call__(self, body: dict) -> str | Scripted:
        prompt = prompt_of(body)
        seed = body.get("seed", 0)
        if is_verification(body):
            steps = parse_steps(prompt.split(": ", 1)[1], prompt.count("Step "))
            canon = tuple(self.inverse.get(s.lower(), s) for s in steps)
            known = self.windows.get((canon[0], canon[-1], len(canon)), {})
            return "Yes." if canon in known else "No, that order does not work."
        m = PROMPT.search(prompt)
        horizon, first, last = int(m.group(1)), m.group(2), m.group(3)
        rng = self.rng(prompt, seed)
        roll = rng.random()
        if roll < 0.04:
            return "I'm sorry, but I can't help with planning this task."
        if roll < 0.08:
            return f"You should start with {first} and finish with {last}."
        known = self.windows.get((first, last, horizon))
        if known:
            plans, counts = zip(*sorted(known.items()))
            plan = plans[int(rng.choice(len(plans), p=np.array(counts) / sum(counts)))]
        else:  # a guess from the start step's task
            pool = self.task_steps[first]
            plan = (first, *[pool[int(rng.integers(len(pool)))] for _ in range(horizon - 2)], last)
        texts = [s if rng.random() < 0.3 else PARAPHRASES[s][int(rng.integers(2))] for s in plan]
        style = int(rng.integers(3))
        if style == 0:
            return "Sure! Here are the steps:\n\n" + "\n".join(f"Step {i}: {t}" for i, t in enumerate(texts, 1))
        if style == 1:
            return "\n".join(f"**Step {i}:** {t}." for i, t in enumerate(texts, 1)) + "\n\nGood luck!"
        return ", ".join(f"Step {i}: {t}" for i, t in enumerate(texts, 1))


def plan_metrics(pred: list[tuple[int, ...]], gt: list[tuple[int, ...]]) -> tuple[float, float, float]:
    """SR, mAcc, mIoU (per episode), in percent."""
    p, g = np.array(pred), np.array(gt)
    sr = (p == g).all(1).mean() * 100
    macc = (p == g).mean() * 100
    miou = np.mean([len(set(a) & set(b)) / len(set(a) | set(b)) for a, b in zip(pred, gt)]) * 100
    return float(sr), float(macc), float(miou)


def mapping_table() -> list[dict]:
    texts = [(p, label) for label, ps in PARAPHRASES.items() for p in ps]
    labels = list(PARAPHRASES)
    rows = []
    for name, emb in (("minilm", MiniLMEmbedder()), ("lexical", LexicalEmbedder())):
        mapper = ActionMapper(labels, emb)
        _ = mapper.matrix  # load the model and embed the labels outside the timing
        t0 = time.perf_counter()
        idx, _ = mapper.map([t for t, _ in texts])
        dt = time.perf_counter() - t0
        acc = np.mean([labels[i] == label for i, (_, label) in zip(idx, texts)]) * 100
        rows.append({"embedder": name, "texts": len(texts), "top-1 accuracy %": round(acc, 1),
                     "ms / text": round(dt / len(texts) * 1000, 2)})
    return rows


def horizon_rows(ds: Dataset, mapper: ActionMapper, cache_root: Path) -> list[dict]:
    from kepp_core.graph.build import ProcedureGraph
    from kepp_core.graph.retrieval import Retriever
    from kepp_core.graph.scorers import P2KGScorer

    graph = ProcedureGraph.from_plans(ds.actions, ds.plans("train"))
    retriever = Retriever(graph, P2KGScorer(graph), R=1)
    rows = []
    with ScriptedChatServer(TextbookServer(ds)) as server:
        for horizon in (3, 4, 5, 6):
            episodes = make_episodes(ds, horizon, "test")
            pairs = [(e.actions[0], e.actions[-1]) for e in episodes]
            gt = [e.actions for e in episodes]
            runs = []
            for _ in range(2):  # first run, then a rerun reading the cache
                client = ChatClient(LLMConfig(server.url, "scripted-textbook", retries=0, timeout=10),
                                    cache_root / f"T{horizon}")
                rec = LLMRecommender(client, ds, mapper)
                t0 = time.perf_counter()
                recs = rec.batch(pairs, horizon, progress=False)
                runs.append((client, time.perf_counter() - t0, recs, rec))
            (c1, t1, recs, rec), (c2, t2, recs2, _) = runs
            assert [r.actions for r in recs] == [r.actions for r in recs2], "a rerun changed the plans"
            summary = rec.summary(recs)
            llm_sr = plan_metrics([r.actions for r in recs], gt)
            graph_sr = plan_metrics([retriever(s, e, horizon).top for s, e in pairs], gt)
            distinct = {(r.start, r.end) for r in recs}
            reasons = Counter()
            for r in {id(r): r for r in recs}.values():
                if r.fallback_reason:
                    reasons[r.fallback_reason.split(" (")[0].split(":")[0]] += 1
            rows.append({
                "T": horizon, "episodes": len(episodes), "pairs": len(distinct),
                "LLM plan used %": round(100 * summary["llm"] / len(recs), 1),
                "fallback pairs (why)": ", ".join(f"{n} {k}" for k, n in reasons.most_common()) or "-",
                "LLM SR/mAcc/mIoU": "/".join(f"{v:.1f}" for v in llm_sr),
                "P²KG top-1 SR/mAcc/mIoU": "/".join(f"{v:.1f}" for v in graph_sr),
                "requests run 1": c1.requests, "s run 1": round(t1, 2),
                "requests rerun": c2.requests, "s rerun": round(t2, 2),
            })
    return rows


def markdown(rows: list[dict]) -> str:
    """The rows as a Markdown table (the package's one writer), their keys as the header."""
    cols = list(rows[0])
    return markdown_table(cols, [[r[c] for c in cols] for r in rows])


def main() -> None:
    import torch

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--videos", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print("## paraphrase -> action mapping (42 demo-world steps, 2 paraphrases each)\n")
    print(markdown(mapping_table()))
    ds = demo_plans(args.videos, args.seed)
    print(f"\n## LLM recommendations, demo world ({args.videos} videos, seed {args.seed}), "
          f"SCRIPTED local server, ground-truth endpoints, mapper minilm\n")
    with tempfile.TemporaryDirectory() as tmp:
        print(markdown(horizon_rows(ds, ActionMapper(ds.actions, MiniLMEmbedder()), Path(tmp))))


if __name__ == "__main__":
    main()
