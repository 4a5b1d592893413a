"""Pickers that stay usable on a dataset of ten thousand videos: a task filter and a search box in
front of a select box that holds a bounded number of matches (a select box of every COIN video
would send ten thousand labels to the browser on every run).

A deep link (or the page's last state after a page switch) still opens its video or episode when
it is not among the shown matches: it is listed first."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from components.ui.text import md
from components.ui.search import find_videos

ALL_TASKS = "(all tasks)"
LIMIT = 200  # entries of a select box


def shown_caption(shown: int, total: int, what: str) -> str:
    """How many of the matches the select box holds.

    >>> shown_caption(200, 10070, "videos")
    'showing 200 of 10,070 matches — narrow the search'
    >>> shown_caption(3, 3, "videos")
    '3 matching videos'
    """
    if total > shown:
        return f"showing {shown:,} of {total:,} matches — narrow the search"
    return f"{total:,} matching {what}"


def task_filter(ds, tasks: Sequence[str], link, key: str, param: str, where=None) -> str | None:
    """A task select box with "(all tasks)" first, seeded from the URL's ``param``; None for all tasks."""
    names = {t: ds.tasks[t].name if t in ds.tasks else t for t in tasks}
    options = [ALL_TASKS, *tasks]
    link.seed(key, param, options, absent=ALL_TASKS)
    task = (where or st).selectbox("Task", options, key=key, format_func=lambda t: names.get(t, t),
                                   help="type to search the tasks")
    link.keep(**{param: None if task == ALL_TASKS else task})
    return None if task == ALL_TASKS else task


def search_box(link, key: str, param: str, placeholder: str, where=None) -> str:
    """A search text box, seeded from the URL's ``param``; kept in the URL when not empty."""
    link.seed(key, param, absent="")
    query = (where or st).text_input("Search", key=key, placeholder=placeholder,
                                     help="every word must occur (any case)")
    link.keep(**{param: query.strip() or None})
    return query


def bounded_options(key: str, matches: list[str], known, seeded: bool) -> list[str]:
    """The select box ``key``'s options: the matches, with its value listed first when the value came
    from a link (or the page's last state) and is not among them; a value that no longer matches
    moves to the first match."""
    current = st.session_state.get(key)
    if current in matches:
        return matches
    if seeded and current in known:
        return [current, *matches[:LIMIT - 1]]
    if matches:
        st.session_state[key] = matches[0]
    return matches


def video_picker(ds, videos: Sequence, link, key: str = "plan") -> str | None:
    """Task filter, search (video id or task name) and a select box of at most :data:`LIMIT` of the
    matching ``videos``; the URL keeps ``video``, ``vtask`` and ``vq``. Returns the chosen video id
    (None when nothing matches, with a message)."""
    by_id = {v.id: v for v in videos}
    seeded = link.seed(f"{key}_video", "video", by_id)
    c_task, c_search = st.columns([2, 3])
    task = task_filter(ds, sorted({v.task for v in videos}), link, f"{key}_vtask", "vtask", c_task)
    query = search_box(link, f"{key}_vsearch", "vq", "video id or task name", c_search)
    names = {t: ds.tasks[t].name for t in ds.tasks}
    found, total = find_videos(videos, names, task, query, LIMIT)
    options = bounded_options(f"{key}_video", [v.id for v in found], by_id, seeded)
    if not options:
        where = f" in task {md(names.get(task, task))}" if task else ""
        st.warning(f"No video matches {md(repr(query.strip()))}{where}: change the search or the task.")
        return None

    def label(vid: str) -> str:
        v = by_id[vid]
        return f"{names.get(v.task, v.task)} · {v.id} ({v.split})"

    vid = st.selectbox("Video", options, format_func=label, key=f"{key}_video")
    st.caption(shown_caption(len(found), total, "videos" if total != 1 else "video")
               + ("" if vid in {v.id for v in found} else " · the linked video is listed first"))
    return vid
