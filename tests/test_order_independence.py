"""Libraries that leave global state behind must not change what later code in the same process does."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from kepp_core.paths import REPO_ROOT

REPO = REPO_ROOT


@pytest.mark.slow
def test_a_checkpoint_loads_after_the_sentence_embedder_ran_in_the_same_process():
    # transformers swaps torch.linspace for a wrapper while it loads a model; torch's list of
    # tensor constructors made in that window used to miss the real function, so the checkpoint
    # size check (built on the meta device) failed with "Tensor on device cpu is not on the
    # expected device meta!". A fresh process, so the test order of the suite cannot hide it.
    script = textwrap.dedent("""
        import torch
        from kepp_core.llm.embedding import make_embedder
        from kepp_core.models.checkpoint import load_checkpoint
        vectors = make_embedder("minilm")(["cut the bread", "boil water"])
        assert vectors.shape[0] == 2
        for role in ("step", "plan-graph-R1"):
            model, cfg = load_checkpoint("assets/demo/T3/" + role)
            assert cfg["kind"] in ("step", "plan")
        with torch.device("meta"):
            assert torch.linspace(0, 1, 3).device.type == "meta"
        print("loaded")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "loaded"
