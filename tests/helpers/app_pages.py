"""The registry of pages (``app/components/ui/pages.py``) against what else names the pages: the scripts of
the pages' folder, docs/app.md's page table and its URL key tables. Plain functions of texts and mappings,
so a test can hold a copy of the app (a page added) to the same rules as the app itself."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path


def doc_tables(text: str) -> dict[str, dict[str, str]]:
    """docs/app.md's URL key tables: the page (its heading's ``url-NAME`` id) -> key -> the row's text."""
    section = text.split("\n### URL keys\n", 1)[1].split("\n## ", 1)[0]
    tables = {}
    for page, body in re.findall(r"<a id=\"url-(\w+)\"></a>[^\n]*\n\n((?:\|[^\n]*\|\n)+)", section, re.S):
        rows = body.splitlines()[2:]
        tables[page] = {re.match(r"\| `([^`]+)` \|", r).group(1): r for r in rows}
    return tables


def doc_headings(text: str) -> dict[str, str]:
    """docs/app.md's URL key tables' headings: the page's name -> the label in bold."""
    return dict(re.findall(r"<a id=\"url-(\w+)\"></a>\*\*([^*]+)\*\*", text))


def doc_page_rows(text: str) -> list[str]:
    """docs/app.md's table of pages (``| page | what it shows |``): its pages, in order."""
    rows = text.split("| page | what it shows |\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    return [re.match(r"\| ([^|]+?) \|", row).group(1) for row in rows]


def disagreements(pages: Mapping, app_dir: Path, folder: str, docs: str) -> list[str]:
    """What does not agree with the registry ``pages`` (``PAGES``) of the app in ``app_dir``: a script of
    ``folder`` that is no entry (or an entry with no script, or out of order), a page docs/app.md's page
    table leaves out or adds, a page's URL key table that docs/app.md lacks, heads with another label or
    lists other keys (or whose rows do not say what each key's parser takes). Empty: they agree."""
    said = []
    files = [f"{folder}/{f.name}" for f in sorted((app_dir / folder).glob("*.py"))]
    if [p.path for p in pages.values()] != files:
        said.append(f"scripts {files} are not the registry's {[p.path for p in pages.values()]}")
    listed = [p.label for p in pages.values() if not p.home]
    if doc_page_rows(docs) != listed:
        said.append(f"docs/app.md's page table lists {doc_page_rows(docs)}, the registry {listed}")
    tables, headings = doc_tables(docs), doc_headings(docs)
    keyed = {p.name: p for p in pages.values() if p.keys}
    if sorted(tables) != sorted(keyed):
        said.append(f"docs/app.md's URL key tables are {sorted(tables)}, the registry's pages with keys {sorted(keyed)}")
    for name, page in keyed.items():
        if name not in tables:
            continue
        if headings.get(name) != page.label:
            said.append(f"docs/app.md heads {name}'s keys {headings.get(name)!r}, its label is {page.label!r}")
        if list(tables[name]) != list(page.keys):
            said.append(f"docs/app.md lists {name}'s keys {list(tables[name])}, the schema {list(page.keys)}")
        said += [f"docs/app.md's {name}.{k} does not say {key.parse.expected!r}"
                 for k, key in page.keys.items() if k in tables[name] and key.parse.expected not in tables[name][k]]
    return said
