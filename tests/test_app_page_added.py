"""A page added to a copy of the app, touching what docs/architecture.md's page walkthrough names (its script,
its registry entry, its URL key table and docs/app.md's rows): the copy's registry, folder and docs agree, the
page opens at its address in a real session, reads its key through its table, and Home and the presentation
bar list it. Run in a subprocess (the copy's ``components`` package, not this process's)."""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from kepp_core.paths import REPO_ROOT
from tests.helpers.app_env import APP_DIR

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]

SCRIPT = '''\
"""Glossary: one of the app's words, named in the address (``?term=``)."""

from __future__ import annotations

import streamlit as st

from components.ui import links
from components.ui.config import page_setup

page_setup("Glossary")
st.title("Glossary")
link = links.PageLink("glossary")
st.markdown(f"term: {link.url.get('term', 'endpoints')}")
'''
ENTRY = '''    Page(name="glossary", file="9_Glossary.py", label="Glossary", icon=":material/menu_book:",
         keys=url_schema.GLOSSARY, what="the app's words"),
)}'''
TABLE = '''
GLOSSARY = _table(
    Key("term", text(32), "the word explained", "`endpoints`"),
)
'''
DOC_ROW = "| Glossary | The app's words, one at a time. |\n"
DOC_TABLE = '''<a id="url-glossary"></a>**Glossary**

| key | holds | its value | left out |
|---|---|---|---|
| `term` | the word explained | text of at most 32 characters, no control characters | `endpoints` |

'''

# run with the copy's app/ first on the path: what the copy's registry and docs say, and what its pages show
CHECK = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    root = Path(sys.argv[1]); sys.path.insert(0, str(root / "app"))
    from streamlit.testing.v1 import AppTest
    from components.ui.pages import FOLDER, PAGES
    from tests.helpers.app_pages import disagreements
    out = {"before_docs": disagreements(PAGES, root / "app", FOLDER, (root / "before.md").read_text()),
           "after_docs": disagreements(PAGES, root / "app", FOLDER, (root / "docs" / "app.md").read_text())}
    home = AppTest.from_file(str(root / "app" / "Home.py"), default_timeout=180).run()
    out["home"] = [e.proto.page for e in home.get("page_link") if "Glossary" in e.proto.label]
    page = AppTest.from_file(str(root / "app" / "Home.py"), default_timeout=180)
    page.query_params.update({"term": "ends", "present": "1"})
    page.switch_page("views/9_Glossary.py").run()
    out["shown"] = [m.value for m in page.markdown if str(m.value).startswith("term:")]
    out["bar"] = [e.proto.label for e in page.get("page_link")]
    out["errors"] = [str(e.value) for e in [*home.exception, *page.exception]]
    bad = AppTest.from_file(str(root / "app" / "Home.py"), default_timeout=180)
    bad.query_params["term"] = "x" * 40
    bad.switch_page("views/9_Glossary.py").run()
    out["bad"] = [str(w.value) for w in bad.warning] + [m.value for m in bad.markdown if str(m.value).startswith("term:")]
    print(json.dumps(out))
''')


def _touched(original, copy) -> list[str]:
    """The files of the app and the docs in ``copy`` that differ from ``original``'s or are new."""
    changed = []

    def walk(d, prefix):
        changed.extend(prefix + n for n in d.diff_files + d.right_only)
        for name, sub in d.subdirs.items():
            walk(sub, f"{prefix}{name}/")
    for top in ("app", "docs"):
        walk(filecmp.dircmp(original / top, copy / top, ignore=["__pycache__"]), f"{top}/")
    return sorted(changed)


def test_a_page_added_in_four_files_opens_at_its_address_reads_its_key_and_is_listed(tmp_path, app_env):
    shutil.copytree(APP_DIR, tmp_path / "app", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "docs").mkdir()
    docs = (REPO_ROOT / "docs" / "app.md").read_text(encoding="utf-8")
    (tmp_path / "before.md").write_text(docs, encoding="utf-8")
    shutil.copy(REPO_ROOT / "docs" / "app.md", tmp_path / "docs" / "app.md")
    original = tmp_path / "original"
    shutil.copytree(tmp_path / "app", original / "app")
    shutil.copytree(tmp_path / "docs", original / "docs")

    # the walkthrough: the page's script, its registry entry, its URL keys, the docs' rows
    (tmp_path / "app" / "views" / "9_Glossary.py").write_text(SCRIPT, encoding="utf-8")
    pages = tmp_path / "app" / "components" / "ui" / "pages.py"
    pages.write_text(pages.read_text(encoding="utf-8").replace("\n)}", "\n" + ENTRY, 1), encoding="utf-8")
    schema = tmp_path / "app" / "components" / "ui" / "url_schema.py"
    schema.write_text(schema.read_text(encoding="utf-8") + TABLE, encoding="utf-8")
    from components.ui.pages import PAGES

    last_row = next(r for r in docs.splitlines(keepends=True) if r.startswith(f"| {list(PAGES.values())[-1].label} |"))
    docs = docs.replace(last_row, last_row + DOC_ROW, 1)  # the new page's row after the registry's last page's
    end = docs.index("\n", docs.index("| `item` | the slide shown, 1-based"))
    docs = docs[:end + 1] + "\n" + DOC_TABLE + docs[end + 2:]
    (tmp_path / "docs" / "app.md").write_text(docs, encoding="utf-8")
    assert _touched(original, tmp_path) == ["app/components/ui/pages.py", "app/components/ui/url_schema.py",
                                            "app/views/9_Glossary.py", "docs/app.md"]
    shutil.rmtree(original)

    env = {**os.environ, **app_env.environ(), "PYTHONPATH": str(REPO_ROOT), "KEPP_THREADS": "1"}
    r = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path)], cwd=REPO_ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["errors"] == []
    assert any("glossary" in said for said in out["before_docs"])  # the docs' rows are part of adding a page
    assert out["after_docs"] == []
    assert out["home"] == ["Glossary"]  # Home lists it, at its address
    assert out["shown"] == ["term: ends"]  # opened at its address, its key read through its table
    assert "Glossary" in out["bar"]  # on the presentation bar
    assert any(w.startswith("Not taken from this link") and "term=" in w for w in out["bad"])
    assert "term: endpoints" in out["bad"]  # a value its table refuses is said and left out
