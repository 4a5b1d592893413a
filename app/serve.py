"""Start the app's Streamlit server and, while it starts, prepare what its first visitors open.

``kepp app`` runs ``python app/serve.py run app/Home.py <streamlit flags>``: the same as
``streamlit run``, plus one background thread that imports what the home page needs and loads
the start configuration's dataset into the app's shared cache (``components.records.backend``) while
the server starts and the browser loads Streamlit's page (a COIN-scale world takes about a
second to open). Then it visits the app itself, as a first visitor's tabs would: each playlist's
first slide (the built-in scenes' and every saved playlist's, in presentation mode), the saved
playlists' other slides, and every page's first view, each run once in a session of its own (a
websocket client of this server: :func:`visit`), so that the models, records, tables, thumbnails and
drawings they need are in the shared caches before a speaker opens them. Between two visits it waits
while a visitor's run goes on (:func:`components.ui.activity.wait_idle`): a speaker's first key after a
restart is never queued behind pages prepared for later. Whatever goes wrong here is left to the page, which
loads what it needs itself and shows the error where it belongs; so is a demo world that is not
built yet.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path


def server_started(timeout: float = 60.0) -> bool:
    """Wait until Streamlit's runtime has started (the server answers): the dataset is opened
    while the browser loads the page, not while the server itself starts on the same cores."""
    from streamlit import runtime

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if runtime.exists() and runtime.get_instance().state != runtime.RuntimeState.INITIAL:
            return True
        time.sleep(0.02)
    return False


def warm() -> None:
    """Open the start configuration's dataset in the app's cache, then visit the first views (:func:`visits`);
    print how long it took."""
    if not server_started():
        return
    t = time.perf_counter()
    # the cache's "missing ScriptRunContext" warning is about this thread, which has no page
    quiet = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        # this script's folder is the path's first entry (Python's own rule for a script; Streamlit keeps it
        # there for the pages), so the app's components import as the pages import them
        from components.records import backend  # in the thread: these imports are part of what it does early
        from components.ui import activity  # as above
        from kepp_core import api  # in the thread, as above

        cfg = api.AppConfig.from_env()
        if backend.records_alone(cfg) is None and not cfg.root and cfg.dataset == "demo" \
                and api.demo_world_root(make=False) is None:
            return  # the demo world is built by the first page, with its progress shown, never out of sight
        ds = backend.dataset(cfg)
    except Exception as e:  # noqa: BLE001  (the page reports it)
        print(f"KEPP app: the dataset was not opened ahead of the first page ({e})", file=sys.stderr)
        return
    finally:
        quiet.setLevel(level)
    print(f"KEPP app: dataset {ds.name} opened ({len(ds.videos)} videos, {time.perf_counter() - t:.1f} s)",
          file=sys.stderr)
    t = time.perf_counter()
    done = 0
    waited = 0.0
    for page, query in visits(cfg):
        waited += activity.wait_idle()  # a visitor's run first (a speaker's key after a restart)
        try:
            visit(page, query)
            done += 1
        except Exception as e:  # noqa: BLE001  (a page that fails shows its error to its visitor)
            print(f"KEPP app: {page or 'Home'}?{query} was not prepared ({e})", file=sys.stderr)
    print(f"KEPP app: ready: {done} first views and slides prepared ({time.perf_counter() - t:.1f} s, "
          f"{waited:.1f} s of it waiting for visitors' runs)", file=sys.stderr)


MAX_PLAYLISTS = 8  # saved playlists whose slides are prepared at start (the built-in scenes' first slide always is)
MAX_SLIDES = 64  # slides prepared at start beyond each playlist's first


def visits(cfg) -> list[tuple[str, str]]:
    """What a speaker and a first visitor open, in order: each playlist's first slide (presentation mode), every
    other slide of the saved playlists (a speaker's next key after a restart finds its slide's data in the
    caches), then every page's first view, as (page name in the address, query)."""
    from urllib.parse import urlencode

    from components.talk import playlists
    from components.ui.pages import PAGES

    names, counts = [playlists.DEFAULT], {}
    try:
        found = playlists.store(cfg)
        names += [n for n in found.listing()[0] if n != playlists.DEFAULT][:MAX_PLAYLISTS]
        counts = {n: len(found.read(n).items) for n in names[1:]}
    except Exception:  # noqa: BLE001  (no playlists folder, or one not allowed: the scenes alone)
        names = names[:1]
    firsts = [("Plan", urlencode({"playlist": name, "present": "1"})) for name in names]
    others = [("Plan", urlencode({"playlist": name, "item": k, "present": "1"}))
              for name in names[1:] for k in range(2, counts.get(name, 0) + 1)][:MAX_SLIDES]
    pages = [(page.url_path, "") for page in PAGES.values()]
    return firsts + others + pages


def visit(page: str, query: str, timeout: float = 180.0) -> float:
    """Run ``page`` (its name in the address; "" for the home page) with ``query`` once, in a session of this
    server's own: a websocket client of it, as a browser tab's first load, until the script has finished and
    nothing follows for half a second (a page that reruns itself). The seconds it took."""
    from streamlit import config
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.sync.client import connect

    address = config.get_option("server.address")
    host = "127.0.0.1" if address in (None, "", "localhost", "0.0.0.0", "::") else address
    base = "/".join(p for p in str(config.get_option("server.baseUrlPath") or "").split("/") if p)
    url = f"ws://{host}:{config.get_option('server.port')}/{base + '/' if base else ''}_stcore/stream"
    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_name = page
    t = time.perf_counter()
    with connect(url, subprotocols=["streamlit"], open_timeout=30, max_size=None) as ws:
        ws.send(msg.SerializeToString())
        finished = False
        while time.perf_counter() - t < timeout:
            try:
                data = ws.recv(timeout=0.5 if finished else timeout)
            except TimeoutError:
                break
            reply = ForwardMsg()
            reply.ParseFromString(data)
            finished = finished or reply.WhichOneof("type") == "script_finished"
    return time.perf_counter() - t


def main() -> int:
    threading.Thread(target=warm, name="kepp-warm", daemon=True).start()
    from streamlit.web.cli import main as streamlit_main

    return streamlit_main(prog_name="streamlit")


if __name__ == "__main__":
    sys.exit(main())
