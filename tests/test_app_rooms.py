"""The app's components sit in rooms by what they serve (``app/components/<room>/``) and each room imports only
downward: ``ui`` ← ``graph`` ← ``records`` ← ``plan`` ← ``talk`` (``tests/structure.py``'s ``ROOMS``), the pages
on top. Read from the source with ``ast``, imports inside functions included."""

from __future__ import annotations

import ast
import shutil

from structure import ROOMS, room_imports, upward_room_imports
from kepp_core.paths import REPO_ROOT

COMPONENTS = REPO_ROOT / "app" / "components"


def test_the_rooms_are_the_folders_of_the_components_and_the_package_says_their_order():
    assert sorted(p.parent.name for p in COMPONENTS.glob("*/__init__.py")) == sorted(ROOMS)
    doc = ast.get_docstring(ast.parse((COMPONENTS / "__init__.py").read_text(encoding="utf-8")))
    assert " ← ".join(f"``{r}``" for r in ROOMS) in " ".join(doc.split())


def test_each_room_imports_only_from_itself_and_the_rooms_below():
    found = room_imports(REPO_ROOT)
    assert {(src, dst) for _, _, src, dst in found} >= {("graph", "ui"), ("records", "graph"), ("plan", "records"),
                                                      ("talk", "plan")}  # the scan sees each step down
    assert upward_room_imports(REPO_ROOT) == []


def test_an_added_upward_import_fails_even_inside_a_function(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(COMPONENTS, root / "app" / "components", ignore=shutil.ignore_patterns("__pycache__"))
    episodes = root / "app" / "components" / "records" / "episodes.py"
    lines = len(episodes.read_text(encoding="utf-8").splitlines())
    episodes.write_text(episodes.read_text(encoding="utf-8")
                        + "\n\ndef _late():\n    from components.talk import playlists\n    return playlists\n")
    assert upward_room_imports(root) == [f"app/components/records/episodes.py:{lines + 4} (records) imports components.talk"]
