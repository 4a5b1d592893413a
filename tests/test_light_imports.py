"""What must stay light stays light: `kepp --help` and the app's first page load without torch.

Each check runs in a fresh interpreter where importing torch fails, so a module-level import of
anything that pulls torch in (the models, training, the planner) into the command line or the
app's first page fails here. The in-function imports of those modules are what keeps them light
(tests/structure.py counts them; elsewhere an in-function import needs a reason in its list)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from kepp_core.paths import REPO_ROOT

REPO = REPO_ROOT
NO_TORCH = textwrap.dedent("""
    import importlib.abc, sys
    class NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ImportError("torch is blocked: this module must stay light")
    sys.meta_path.insert(0, NoTorch())
""")


def run_without_torch(code: str, app: bool = False) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter where importing torch fails (``app``: with the app's folder on PYTHONPATH, as
    Streamlit puts a page's folder on the path)."""
    path = os.pathsep.join([*([str(REPO / "app")] if app else []), str(REPO)])
    return subprocess.run([sys.executable, "-c", NO_TORCH + textwrap.dedent(code)], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": path})


def test_torch_is_really_blocked_in_the_check():
    r = run_without_torch("import kepp_core.models.checkpoint")
    assert r.returncode != 0 and "torch is blocked" in r.stderr


def test_kepp_help_and_every_command_help_load_without_torch():
    from kepp_core.cli import GROUPS

    r = run_without_torch(f"""
        import contextlib, io, sys
        from kepp_core.cli import main
        for argv in [["--help"]] + [[g, "--help"] for g in {GROUPS!r}]:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                try:
                    main(argv)
                except SystemExit as e:
                    assert e.code == 0, (argv, e.code)
            assert "usage: kepp" in out.getvalue(), argv
        assert not [m for m in sys.modules if m == "torch" or m.startswith("torch.")]
        print("light")
    """)
    assert r.returncode == 0 and r.stdout.strip() == "light", r.stderr[-3000:]


def _home_imports() -> list[str]:
    """What the main script and the first page (Home, ``app/views/0_Home.py``) import at their top."""
    import ast

    names = []
    body = [node for script in ("Home.py", "views/0_Home.py")
            for node in ast.parse((REPO / "app" / script).read_text(encoding="utf-8")).body]
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names]
    return [n for n in names if n.split(".")[0] in ("components", "kepp_core")]


@pytest.mark.slow
@pytest.mark.parametrize("module", _home_imports() + ["kepp_core.api", "kepp_core.catalog", "kepp_core.paths"])
def test_the_app_first_page_modules_load_without_torch(module):
    r = run_without_torch(f"""
        import sys
        import {module}
        assert not [m for m in sys.modules if m == "torch" or m.startswith("torch.")]
    """, app=True)
    assert r.returncode == 0, r.stderr[-3000:]
