"""The LLM condition row end to end: ``kepp train plan --condition llm|graph+llm`` and the
``kepp-llm`` / ``kepp-graph-llm`` evaluation methods against a scripted chat server on
127.0.0.1 (started here; nothing leaves the machine)."""

from __future__ import annotations

import json
import re
import socket
from collections import Counter

import pytest
import torch
from llm_server import ScriptedChatServer, is_verification, prompt_of

from tests.helpers.training import kepp, tiny_cfg, tiny_world

pytestmark = pytest.mark.slow  # every test here trains, or runs several commands in fresh processes

torch.set_num_threads(1)
PROMPT = re.compile(r"I know (\d+) steps are required, the first step is (.+?), and the last step is (.+?) and")


class Textbook:
    """Answers a plan prompt with the most frequent training window between its two steps
    (lower-cased, numbered), refuses plans that start with ``refuse``; says Yes to checks."""

    def __init__(self, ds, refuse: str | None = None) -> None:
        self.windows: dict[tuple[str, str, int], Counter] = {}
        for plan in ds.plans("train"):
            for t in range(2, len(plan) + 1):
                for i in range(len(plan) - t + 1):
                    w = tuple(ds.actions[a] for a in plan[i:i + t])
                    self.windows.setdefault((w[0], w[-1], t), Counter())[w] += 1
        self.refuse = refuse

    def __call__(self, body: dict) -> str:
        if is_verification(body):
            return "Yes"
        horizon, first, last = PROMPT.search(prompt_of(body)).groups()
        if first == self.refuse:
            return "I'm sorry, I can't help with that."
        known = self.windows.get((first, last, int(horizon)))
        plan = known.most_common(1)[0][0] if known else (first,) * (int(horizon) - 1) + (last,)
        return "\n".join(f"Step {i}: {s.upper()}" for i, s in enumerate(plan, 1))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from kepp_core.data import load_dataset
    from kepp_core.training.suite import train_horizon

    root = tmp_path_factory.mktemp("llm-train")
    world = tiny_world(root / "world", seed=2)
    ds = load_dataset("demo", world)
    train_horizon(ds, tiny_cfg(horizon=3, train_steps=60), root / "models", ("step", "plan-graph-R1"),
                  progress=False, log=lambda s: None)
    return world, ds, root / "models"


TINY_ARGS = ["--diffusion-steps", "10", "--dim", "16", "--batch-size", "32", "--train-steps", "60", "--lr", "3e-3",
             "--warmup", "5", "--decay", "30:0.5", "--val-every", "20", "--sampler", "ddim", "--sampler-steps", "4",
             "--no-progress", "--json"]


def llm_args(url, cache) -> list:
    return ["--llm-url", url, "--llm-model", "scripted", "--llm-cache", cache, "--llm-mapper", "lexical",
            "--llm-retries", "0", "--llm-timeout", "5"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_llm_rows_train_and_evaluate_end_to_end_with_cached_replies(trained, tmp_path):
    world, ds, models = trained
    refuse = ds.actions[ds.plans("train")[0][0]]
    cache = tmp_path / "cache"
    with ScriptedChatServer(Textbook(ds, refuse=refuse)) as server:
        for condition, folder in (("llm", "plan-llm"), ("graph+llm", "plan-graph-llm")):
            before = len(server.requests)
            r = kepp("train", "plan", "--dataset", "demo", "--root", world, "-T", "3", "--condition", condition,
                     "--step-model", models / "T3" / "step", "--out", models / "T3" / folder, *TINY_ARGS,
                     *llm_args(server.url, cache))
            assert r.returncode == 0, r.stderr
            s = json.loads(r.stdout)["llm"]
            assert s["llm"] > 0 and s["fallback"] > 0 and s["fallback_name"] == "endpoint-variation"
            assert list(s["fallback_reasons"]) == ["the model refused"]
            cfg = json.loads((models / "T3" / folder / "config.json").read_text())
            assert [row["name"] for row in cfg["model"]["layout"]["rows"]] == condition.replace("+", " ").split()
            assert cfg["llm"]["model"] == "scripted" and cfg["llm"]["llm"] == s["llm"]
            if condition == "llm":
                assert s["requests"] > 0 and len(server.requests) > before
                first_prompts = server.prompts()
            else:  # same endpoints, same prompts: every reply comes from the cache
                assert s["requests"] == 0 and s["cache_hits"] > 0 and len(server.requests) == before
        assert sum(p.startswith("In the multi-step task") for p in first_prompts) % 3 == 0  # three queries each

        r = kepp("eval", "--dataset", "demo", "--root", world, "--models", models, "-T", "3", "--json",
                 "--methods", "random", "kepp-R1", "kepp-llm", "kepp-graph-llm", "--samples", "3",
                 "--records", tmp_path / "pred.jsonl", *llm_args(server.url, cache))
        assert r.returncode == 0, r.stderr
    by = {x["method"]: x for x in json.loads(r.stdout)["rows"]}
    for name in ("kepp-llm", "kepp-graph-llm"):
        row = by[name]
        assert row["llm_plans"] + row["llm_fallbacks"] == row["episodes"] and row["llm_plans"] > 0
        assert row["fallback"] == "endpoint-variation" and row["K"] == 3
        assert row["SR"] > by["random"]["SR"]
    recs = [json.loads(x) for x in (tmp_path / "pred.jsonl").read_text().splitlines()]
    assert len(recs) == by["kepp-llm"]["episodes"]
    assert sum(r["llm"]["kepp-llm"]["source"] == "llm" for r in recs) == by["kepp-llm"]["llm_plans"]
    assert all(len(r["samples"]["kepp-R1"]) == 3 and len(r["samples"]["kepp-R1"][0]) == 3 for r in recs)


def test_server_down_evaluation_goes_on_with_the_reported_fallback(trained, tmp_path):
    world, ds, models = trained
    if not (models / "T3" / "plan-llm" / "config.json").is_file():  # the end-to-end test ran elsewhere
        with ScriptedChatServer(Textbook(ds)) as server:
            r = kepp("train", "plan", "--dataset", "demo", "--root", world, "-T", "3", "--condition", "llm",
                     "--step-model", models / "T3" / "step", "--out", models / "T3" / "plan-llm", *TINY_ARGS,
                     *llm_args(server.url, tmp_path / "cache"))
        assert r.returncode == 0, r.stderr
    r = kepp("eval", "--dataset", "demo", "--root", world, "--models", models, "-T", "3",
             "--methods", "kepp-llm", *llm_args(f"http://127.0.0.1:{free_port()}/v1", tmp_path / "empty"))
    assert r.returncode == 0, r.stderr
    assert "fallback 'endpoint-variation' used for kepp-llm T=3" in r.stdout
    assert "cannot reach the LLM endpoint http://127.0.0.1:" in r.stdout and "LLM endpoint not asked" in r.stdout
    r = kepp("eval", "--dataset", "demo", "--root", world, "--models", models, "-T", "3", "--json",
             "--methods", "kepp-llm", env={"KEPP_LLM_URL": ""})
    assert r.returncode == 0 and "no LLM endpoint configured" in json.loads(r.stdout)["skipped"]["T=3 conventional kepp-llm"]


def test_an_llm_condition_without_an_endpoint_is_a_one_line_error(trained, tmp_path):
    world, _ds, models = trained
    r = kepp("train", "plan", "--dataset", "demo", "--root", world, "-T", "3", "--condition", "llm",
             "--step-model", models / "T3" / "step", "--out", tmp_path / "m", *TINY_ARGS,
             env={"KEPP_LLM_URL": "", "KEPP_LLM_MODEL": ""})
    assert r.returncode == 2 and "KEPP_LLM_URL" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "m" / "config.json").exists()
