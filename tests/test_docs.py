"""The documentation: a short README that gets a newcomer running, and a site (mkdocs-material,
``docs/``) that builds with no broken link or reference; docstrings cite the docs or the paper."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from kepp_core.paths import REPO_ROOT

REPO = REPO_ROOT
README_MAX_LINES = 300


@pytest.mark.slow
def test_the_site_builds_in_strict_mode(tmp_path):
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("mkdocs is missing: requirements.txt installs it")
        pytest.skip("mkdocs is not installed (make test installs requirements.txt)")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")], cwd=REPO,
                       capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "index.html").is_file()
    assert (tmp_path / "site" / "screenshots" / "plan.png").is_file()


def test_the_readme_is_short_and_its_quick_start_has_the_two_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    quick = text.split("## Quick start", 1)[1]
    block = quick.split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]


def test_every_readme_link_to_the_docs_resolves():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local and all((REPO / t).exists() for t in local), [t for t in local if not (REPO / t).exists()]


def test_docstrings_cite_the_docs_or_the_paper_not_issues():
    cited = []
    for folder in ("kepp_core", "app", "benchmarks", "tests"):
        for path in (REPO / folder).rglob("*.py"):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(r"[Ii]ssue \d+|KEPP\.md", line) and path.name != "test_docs.py":
                    cited.append(f"{path.relative_to(REPO)}:{n}")
    assert cited == []
