"""Paging through tens of thousands of episode records: the page shows one page of rows (a table
and an episode select box over that page only), never all of them.

The page number follows the episode: a deep link to an episode (or the page's last episode after a
page switch) opens the page that holds it, and the episode buttons step across page borders. The
URL keeps only the episode; its page is found again from it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

PAGE_SIZE = 50


def position(episodes: pd.Series, episode: str | None) -> int | None:
    """The first position of ``episode`` among ``episodes`` (vectorised), or None."""
    if episode is None or not len(episodes):
        return None
    hits = np.flatnonzero(episodes.to_numpy() == episode)
    return int(hits[0]) if len(hits) else None


def page_caption(lo: int, hi: int, total: int, what: str = "episodes") -> str:
    """Which rows the page shows.

    >>> page_caption(0, 50, 23456)
    'episodes 1–50 of 23,456'
    """
    return f"{what} {lo + 1:,}–{hi:,} of {total:,}" if total else f"no {what}"


def _move_page(page_key: str, pages: int, delta: int) -> None:
    """on_click of the page buttons."""
    st.session_state[page_key] = min(max(int(st.session_state.get(page_key, 1)) + delta, 1), pages)


def _step_episode(episode_key: str, page_key: str, episodes: list[str], size: int, delta: int) -> None:
    """on_click of the episode buttons: the previous or next episode of all pages (wrapping), with its page."""
    if not episodes:
        return
    now = st.session_state.get(episode_key)
    i = episodes.index(now) if now in episodes else 0
    j = (i + delta) % len(episodes)
    st.session_state[episode_key] = episodes[j]
    st.session_state[page_key] = j // size + 1


def pager(link, key: str, episodes: pd.Series, episode_key: str, size: int = PAGE_SIZE) -> tuple[int, int]:
    """Page controls for ``episodes`` (one row each, in the order shown): previous/next page and a page
    number, and the caption "episodes 1–50 of N". A new ``episode`` in the URL, or the page's last
    one when the select box ``episode_key`` lost its state in a page switch, picks the page that holds
    it. Returns the rows ``lo:hi`` of the current page."""
    n = len(episodes)
    pages = max(1, math.ceil(n / size))
    page_key = f"{key}_page"
    wanted = link.new("episode")
    if wanted is None and episode_key not in st.session_state:
        wanted = link.mem.get("episode")
    at = position(episodes, wanted)
    if at is not None:
        st.session_state[page_key] = at // size + 1
    elif not 1 <= int(st.session_state.get(page_key, 1)) <= pages:  # fewer pages after a filter change
        st.session_state[page_key] = 1
    prev_col, num_col, next_col, text_col = st.columns([1, 1, 1, 3], vertical_alignment="bottom")
    prev_col.button("◀ Page", key=f"{key}_page_prev", on_click=_move_page, args=(page_key, pages, -1),
                    disabled=st.session_state.get(page_key, 1) <= 1, help="the previous page", width="stretch")
    page = int(num_col.number_input(f"Page (of {pages:,})", 1, pages, key=page_key, step=1,
                                    **({} if page_key in st.session_state else {"value": 1})))
    next_col.button("Page ▶", key=f"{key}_page_next", on_click=_move_page, args=(page_key, pages, 1),
                    disabled=page >= pages, help="the next page", width="stretch")
    lo, hi = (page - 1) * size, min(page * size, n)
    text_col.caption(page_caption(lo, hi, n))
    return lo, hi


def episode_buttons(key: str, episode_key: str, episodes: pd.Series, where, size: int = PAGE_SIZE) -> None:
    """Previous / next episode buttons (in ``where``: two columns) that go on to the neighbouring
    page at a page border."""
    left, right = where
    args = (episode_key, f"{key}_page", episodes.tolist(), size)
    left.button("◀ Previous", key=f"{key}_ep_prev", on_click=_step_episode, args=(*args, -1),
                help="the previous episode", width="stretch")
    right.button("Next ▶", key=f"{key}_ep_next", on_click=_step_episode, args=(*args, 1),
                 help="the next episode", width="stretch")
