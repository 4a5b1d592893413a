"""Paging through tens of thousands of episode records: the page shows one page of rows (a table
and an episode select box over that page only), never all of them.

The page number follows the episode: a deep link to an episode (or the page's last episode after a
page switch) opens the page that holds it, and the episode buttons step across page borders. The
URL keeps the episode and, past the first page, the page: records of several seeds list an episode
once per seed, and the page says which of them is meant."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from components.ui.url_schema import RESULTS, Expected

PAGE_SIZE = 50


def position(episodes: pd.Series, episode: str | None, page: int | None = None, size: int = PAGE_SIZE) -> int | None:
    """The position of ``episode`` among ``episodes`` (vectorised): its first on ``page`` when it is
    there (an episode of several seeds is listed once per seed), else its first; None when absent.

    >>> position(pd.Series(["a", "b", "a", "c"]), "a"), position(pd.Series(["a", "b", "a", "c"]), "a", page=2, size=2)
    (0, 2)
    >>> position(pd.Series(["a · seed 0", "a · seed 1"]), "a"), position(pd.Series(["a · seed 0"]), "a · seed 1")
    (0, None)
    """
    if episode is None or not len(episodes):
        return None
    hits = np.flatnonzero(episodes.to_numpy() == episode)
    if not len(hits):  # a plain episode id where rows name their seed (components.records.episodes.unit_ids)
        hits = np.flatnonzero(episodes.astype(str).str.startswith(f"{episode} · ").to_numpy())
    if page is not None:
        on_page = hits[(hits >= (page - 1) * size) & (hits < page * size)]
        hits = on_page if len(on_page) else hits
    return int(hits[0]) if len(hits) else None


def _page_number(text: str | None) -> int | None:
    """A page number as the URL's table reads it (None: absent or not taken).

    >>> _page_number("2"), _page_number("²"), _page_number(None)
    (2, None, None)
    """
    try:
        return None if text is None else RESULTS["page"].parse(str(text))
    except Expected:
        return None


def page_caption(lo: int, hi: int, total: int, what: str = "episodes") -> str:
    """Which rows the page shows.

    >>> page_caption(0, 50, 23456)
    'episodes 1–50 of 23,456'
    """
    return f"{what} {lo + 1:,}–{hi:,} of {total:,}" if total else f"no {what}"


def _move_page(page_key: str, pages: int, delta: int) -> None:
    """on_click of the page buttons."""
    st.session_state[page_key] = min(max(int(st.session_state.get(page_key, 1)) + delta, 1), pages)


def _step_episode(episode_key: str, page_key: str, episodes: pd.Series, size: int, delta: int) -> None:
    """on_click of the episode buttons: the previous or next episode of all pages (wrapping), with its page."""
    if not len(episodes):
        return
    i = position(episodes, st.session_state.get(episode_key), int(st.session_state.get(page_key, 1)), size) or 0
    j = (i + delta) % len(episodes)
    st.session_state[episode_key] = episodes.iloc[j]
    st.session_state[page_key] = j // size + 1


def pager(link, key: str, episodes: pd.Series, episode_key: str, size: int = PAGE_SIZE, *,
          params: tuple[str, str] = ("episode", "page"), what: str = "episodes") -> tuple[int, int]:
    """Page controls for ``episodes`` (one row each, in the order shown): previous/next page and a page
    number, and the caption "episodes 1–50 of N". A new ``episode`` in the URL, or the page's last
    one when the select box ``episode_key`` lost its state in a page switch, picks the page that holds
    it. ``params``: the URL's keys of the episode and the page (a second list on a page has its own);
    ``what``: the rows' name in the caption.
    Returns the rows ``lo:hi`` of the current page."""
    n = len(episodes)
    pages = max(1, math.ceil(n / size))
    page_key = f"{key}_page"
    episode_param, page_param = params
    wanted, hint = link.new(episode_param), link.url.get(page_param)
    if wanted is None and episode_key not in st.session_state:
        wanted, hint = link.mem.get(episode_param), link.mem.get(page_param)
    at = position(episodes, wanted, _page_number(hint), size)
    if at is not None:
        st.session_state[page_key] = at // size + 1
    elif not 1 <= int(st.session_state.get(page_key, 1)) <= pages:  # fewer pages after a filter change
        st.session_state[page_key] = 1
    page, lo, hi = _page_controls(key, page_key, pages, n, size, what)
    link.keep(**{page_param: page if page > 1 else None})
    return lo, hi


def episode_buttons(key: str, episode_key: str, episodes: pd.Series, where, size: int = PAGE_SIZE) -> None:
    """Previous / next episode buttons (in ``where``: two columns) that go on to the neighbouring
    page at a page border."""
    left, right = where
    args = (episode_key, f"{key}_page", episodes, size)
    left.button("◀ Previous", key=f"{key}_ep_prev", on_click=_step_episode, args=(*args, -1),
                help="the previous episode", width="stretch")
    right.button("Next ▶", key=f"{key}_ep_next", on_click=_step_episode, args=(*args, 1),
                 help="the next episode", width="stretch")


def rows_pager(link, key: str, n: int, size: int = PAGE_SIZE, *, param: str = "page", what: str = "episodes") -> tuple[int, int]:
    """Page controls over ``n`` rows that no episode select box follows (a grid of tiles): previous/next page, the
    page number and the caption "episodes 1–12 of N"; the page comes from the URL's ``param`` when it is news
    (a link, a reload), and stays in the URL past the first. Returns the rows ``lo:hi`` of the current page."""
    pages = max(1, math.ceil(n / size))
    page_key = f"{key}_page"
    wanted = _page_number(link.new(param) or (None if page_key in st.session_state else link.mem.get(param)))
    if wanted is not None:
        st.session_state[page_key] = wanted
    if not 1 <= int(st.session_state.get(page_key, 1)) <= pages:  # fewer pages after a filter change
        st.session_state[page_key] = 1
    page, lo, hi = _page_controls(key, page_key, pages, n, size, what)
    link.keep(**{param: page if page > 1 else None})
    return lo, hi


def _page_controls(key: str, page_key: str, pages: int, n: int, size: int, what: str) -> tuple[int, int, int]:
    """The page controls (previous, the page number, next, the caption) over ``n`` rows in ``pages`` pages of
    ``size``: ``(page, lo, hi)``, the rows ``lo:hi`` of the page shown."""
    prev_col, num_col, next_col, text_col = st.columns([1, 1, 1, 3], vertical_alignment="bottom")
    prev_col.button("◀ Page", key=f"{key}_page_prev", on_click=_move_page, args=(page_key, pages, -1),
                    disabled=st.session_state.get(page_key, 1) <= 1, help="the previous page", width="stretch")
    page = int(num_col.number_input(f"Page (of {pages:,})", 1, pages, key=page_key, step=1,
                                    **({} if page_key in st.session_state else {"value": 1})))
    next_col.button("Page ▶", key=f"{key}_page_next", on_click=_move_page, args=(page_key, pages, 1),
                    disabled=page >= pages, help="the next page", width="stretch")
    lo, hi = (page - 1) * size, min(page * size, n)
    text_col.caption(page_caption(lo, hi, n, what))
    return page, lo, hi
