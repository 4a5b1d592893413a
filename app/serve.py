"""Start the app's Streamlit server and, while it starts, open the configured dataset.

``kepp app`` runs ``python app/serve.py run app/Home.py <streamlit flags>``: the same as
``streamlit run``, plus one background thread that imports what the home page needs and loads
the start configuration's dataset into the app's shared cache (``components.backend``) while
the server starts and the browser loads Streamlit's page. A COIN-scale world takes about a
second to open; done here, the first page no longer waits for it. Whatever goes wrong here is
left to the page, which loads the dataset itself and shows the error where it belongs; so is a
demo world that is not built yet.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path

APP = Path(__file__).resolve().parent


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
    """Open the start configuration's dataset in the app's cache; print how long it took."""
    if not server_started():
        return
    t = time.perf_counter()
    # the cache's "missing ScriptRunContext" warning is about this thread, which has no page
    quiet = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        if str(APP) not in sys.path:  # as Streamlit adds the script's folder for the pages
            sys.path.insert(0, str(APP))
        from components import backend  # in the thread: these imports are part of what it does early
        from kepp_core import api  # in the thread, as above

        cfg = api.AppConfig.from_env()
        if not cfg.root and cfg.dataset == "demo" and not api.demo_world_ready():
            return  # the demo world is built by the first page, with its progress shown, never out of sight
        ds = backend.dataset(cfg)
    except Exception as e:  # noqa: BLE001  (the page reports it)
        print(f"KEPP app: the dataset was not opened ahead of the first page ({e})", file=sys.stderr)
        return
    finally:
        quiet.setLevel(level)
    print(f"KEPP app: dataset {ds.name} opened ({len(ds.videos)} videos, {time.perf_counter() - t:.1f} s)",
          file=sys.stderr)


def main() -> int:
    threading.Thread(target=warm, name="kepp-warm", daemon=True).start()
    from streamlit.web.cli import main as streamlit_main

    return streamlit_main(prog_name="streamlit")


if __name__ == "__main__":
    sys.exit(main())
