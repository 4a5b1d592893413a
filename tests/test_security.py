"""The app is a web server: dataset text never runs in the browser. Step labels, task names and
video ids made of script-injection strings go through every page in a real headless Chromium; a
listener on 127.0.0.1 must receive nothing, no ``window`` property may be set, and the labels
still show as text (exactly, in the drawn network)."""

from __future__ import annotations

import http.server
import json
import threading
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.browser import all_loaded, app_server, graph_frame

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]

def hostile_strings(port: int) -> dict[str, str]:
    """Script-injection strings, each of which would call the listener and set ``window.__kepp_pwned``."""
    url = f"http://127.0.0.1:{port}"
    return {
        "script": f"</script><script>fetch('{url}/script');window.__kepp_pwned='script'</script>",
        "img": f"<img src=x onerror=\"fetch('{url}/img');window.__kepp_pwned='img'\">",
        "js-url": f"javascript:fetch('{url}/js-url');window.__kepp_pwned='js-url'",
        "separator": "a\u2028b\u2029</script><script>window.__kepp_pwned='separator'</script>",
        "svg": f"<svg onload=\"fetch('{url}/svg');window.__kepp_pwned='svg'\">",
        "markdown": f"![x]({url}/markdown) [link](javascript:window.__kepp_pwned='markdown')",
        # video and task ids hold no "/" (an id names files): the same attacks, their URL built in script
        "img-id": f"<img src=x onerror=\"fetch('http:'+S+S+'127.0.0.1:{port}'+S+'img');window.__kepp_pwned='img'\">"
                  .replace("S+", "String.fromCharCode(47)+"),
        "svg-id": f"<svg onload=\"fetch('http:'+S+S+'127.0.0.1:{port}'+S+'svg');window.__kepp_pwned='svg'\">"
                  .replace("S+", "String.fromCharCode(47)+"),
    }


DRAIN = "/kepp-drain"  # the listener's own request (see Listener.drained_hits), never a hit


class Listener(http.server.ThreadingHTTPServer):
    """Records every request it receives (nothing should reach it) and counts the connections it is
    still answering, so that a test can wait until what reached it has been recorded."""

    def __init__(self):
        self.hits: list[str] = []
        self._open = 0
        self._closed = threading.Condition()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            timeout = 5  # a connection that never sends a request is closed after 5 s

            def do_GET(self):  # noqa: N802 (http.server's name)
                if self.path != DRAIN:
                    outer.hits.append(self.path)
                self.send_response(204)
                self.end_headers()

            do_POST = do_GET

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    def process_request(self, request, client_address):
        with self._closed:
            self._open += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        try:
            super().shutdown_request(request)
        finally:
            with self._closed:
                self._open -= 1
                self._closed.notify_all()

    def drained_hits(self, timeout: float = 30.0) -> list[str]:
        """The requests received, once every connection made before this call has been answered: a request
        of its own queues behind them (connections are accepted in order), then the open ones are waited out."""
        urllib.request.urlopen(f"http://127.0.0.1:{self.server_address[1]}{DRAIN}", timeout=timeout).close()
        with self._closed:
            assert self._closed.wait_for(lambda: self._open == 0, timeout=timeout), "a connection stayed open"
        return list(self.hits)


@pytest.fixture(scope="module")
def listener():
    server = Listener()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


@pytest.fixture(scope="module")
def hostile_plans(tmp_path_factory, listener) -> tuple[Path, dict[str, str]]:
    """A plans file whose step labels, task ids and video ids are the hostile strings (ids: those without a "/")."""
    bad = hostile_strings(listener.server_address[1])
    labels = [v for k, v in bad.items() if not k.endswith("-id")] + ["cut bread", "spread butter", "serve"]
    tasks = [bad["img-id"], bad["svg-id"], "plain task"]
    lines = []
    for i in range(60):
        task = tasks[i % len(tasks)]
        steps = [labels[(i + k) % len(labels)] for k in range(4)] + ["serve"]
        video = (bad["img-id"] if i == 0 else bad["svg-id"] if i == 1 else f"video {i}") + f" {i}"
        lines.append(json.dumps({"video": video, "task": task, "split": "test" if i % 4 == 0 else "train",
                                 "steps": steps}))
    path = tmp_path_factory.mktemp("hostile") / "plans.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, bad


@pytest.fixture(scope="module")
def hostile_playlists(hostile_plans) -> Path:
    """A records folder (no records) whose playlists hold the hostile strings as episodes, methods,
    notes and query values, and a playlist file whose name is markup."""
    plans, bad = hostile_plans
    folder = plans.parent / "records"
    (folder / "playlists").mkdir(parents=True)
    items = [{"episode": text, "method": text, "T": 3, "note": text,
              "query": {"video": text, "ep": "0", "T": "3", "plan": "1", "model": text}} for text in bad.values()]
    playlist = {"format": "kepp-playlist", "version": 1, "items": items}
    (folder / "playlists" / "hostile.json").write_text(json.dumps(playlist), encoding="utf-8")
    (folder / "playlists" / "<img src=x onerror=window.__kepp_pwned=1>.json").write_text(json.dumps(playlist))
    return folder


@pytest.fixture(scope="module")
def hostile_app(hostile_plans, hostile_playlists):
    from kepp_core.api import AppConfig

    plans, bad = hostile_plans
    with app_server(AppConfig(dataset="plans", root=str(plans), predictions=str(hostile_playlists))) as url:
        yield url, bad


def _settle(page) -> None:
    """No run of the script going and every document of the page loaded: drawings and frames have run
    their scripts, and every image has loaded or failed (an ``onerror`` has run)."""
    all_loaded(page)


def _pwned(page) -> list:
    found = []
    for frame in page.frames:
        try:
            value = frame.evaluate("() => window.__kepp_pwned === undefined ? null : String(window.__kepp_pwned)")
        except Exception:  # a frame can detach while we look
            continue
        if value is not None:
            found.append(value)
    return found


def _network_labels(page) -> list[str]:
    labels = []
    for frame in page.frames:
        try:
            if frame.evaluate("() => typeof network !== 'undefined'"):
                # a step's label, and its full name (a word too wide for its column is shortened with "…" in
                # the drawing; the full name is the first line of its hover text)
                labels += frame.evaluate("() => network.body.data.nodes.get().flatMap(n => [n.label, "
                                         "String((n.title && n.title.innerText) || n.title || '').split('\\n')[0]])")
        except Exception:
            continue
    return labels


def _pages(url: str, bad: dict[str, str]) -> list[tuple[str, str]]:
    q = urllib.parse.quote
    return [
        ("home", f"{url}/"),
        ("plan", f"{url}/Plan"),
        ("graph around a hostile step", f"{url}/Graph?step={q(bad['script'])}"),
        ("graph around another", f"{url}/Graph?step={q(bad['img'])}&depth=2"),
        ("graph around a third", f"{url}/Graph?step={q(bad['separator'])}"),
        ("expert trajectories of a hostile task", f"{url}/Graph?tab=expert&etask={q(bad['img-id'])}"),
        ("expert trajectories of another", f"{url}/Graph?tab=expert&etask={q(bad['svg-id'])}"),
        ("heatmaps", f"{url}/Heatmaps"),
        ("failure cases", f"{url}/Failure_cases"),
        ("results", f"{url}/Results"),
        ("training", f"{url}/Training"),
        ("a playlist of hostile episodes", f"{url}/Playlists?playlist=hostile"),
        ("a hostile playlist name", f"{url}/Playlists?playlist={q(bad['script'])}"),
        ("another hostile playlist name", f"{url}/Playlists?playlist={q(bad['img'])}"),
        ("playing a hostile playlist", f"{url}/Plan?playlist=hostile&item=2"),
        ("the presenter view of a hostile playlist", f"{url}/Presenter?playlist=hostile&item=2"),
    ]


def test_no_dataset_string_runs_as_script_on_any_page(hostile_app, browser, listener):
    url, bad = hostile_app
    seen_labels: set[str] = set()
    for name, address in _pages(url, bad):
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(address)
        _settle(page)
        if "/Graph" in address:  # the open tab's drawing, its nodes there (a loaded frame can still be drawing)
            graph_frame(page, timeout=60)
        assert not _pwned(page), f"{name}: a dataset string ran as script"
        assert not dialogs, name
        seen_labels.update(_network_labels(page))
        page.close()
    assert listener.drained_hits() == [], f"the page made requests with dataset strings: {listener.hits}"
    # the drawings show the hostile labels exactly, as text
    assert bad["script"] in seen_labels and bad["img"] in seen_labels and bad["separator"] in seen_labels


def test_the_plan_page_plans_with_hostile_labels_and_shows_them_as_text(hostile_app, browser, listener):
    url, bad = hostile_app
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{url}/Plan")
    _settle(page)
    page.get_by_text("Planning with the graph alone", exact=False).wait_for(timeout=120_000)
    page.wait_for_function("() => document.querySelectorAll('.kepp-plan .kepp-card').length >= 3", timeout=60_000)
    _settle(page)
    cards = page.evaluate("() => [...document.querySelectorAll('.kepp-card div:last-child')].map(d => d.innerText)")
    assert any(c in (bad["script"], bad["img"], bad["svg"]) for c in cards), cards
    assert not _pwned(page)
    page.close()
    assert listener.drained_hits() == []


def test_a_playlist_of_hostile_episodes_shows_them_as_text(hostile_app, browser, listener):
    url, bad = hostile_app
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{url}/Playlists?playlist=hostile")
    page.get_by_role("link", name="Present", exact=True).wait_for(timeout=120_000)
    _settle(page)
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert all(s in text for s in (bad["script"], bad["img"], bad["svg"], bad["js-url"])), text[:2000]
    assert "1 file(s) there are left out" in text  # the playlist file named with markup is not listed
    assert not _pwned(page)
    # the presenter view shows the hostile notes as text too
    page.goto(f"{url}/Presenter?playlist=hostile")
    page.locator(".kepp-note").first.wait_for(timeout=120_000)
    _settle(page)
    assert page.locator(".kepp-note").first.inner_text().strip() in (bad["script"], bad["img"], bad["svg"], bad["js-url"])
    assert not _pwned(page)
    page.close()
    assert listener.drained_hits() == []


@pytest.fixture(scope="module")
def hostile_records_app(hostile_plans, tmp_path_factory):
    """The hostile plans with prediction records of their test episodes (every other plan wrong at
    its last step), so that the records pages draw their slice tables with hostile task names."""
    from kepp_core.api import AppConfig
    from kepp_core.data import load_dataset, make_episodes

    plans, bad = hostile_plans
    ds = load_dataset("plans", plans)
    lines = []
    for k, ep in enumerate(make_episodes(ds, 3, "test")):
        plan = list(ep.actions) if k % 2 else [*ep.actions[:-1], (ep.actions[-1] + 1) % ds.num_actions]
        lines.append(json.dumps({"episode": ep.id, "video": ep.video.id, "task": ep.video.task, "T": 3,
                                 "setting": "conventional", "seed": 0, "gt": list(ep.actions),
                                 "plans": {"graph-gt": plan}}))
    records = tmp_path_factory.mktemp("hostile-records") / "preds.jsonl"
    records.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with app_server(AppConfig(dataset="plans", root=str(plans), predictions=str(records))) as url:
        yield url, bad


def test_hostile_task_names_in_the_slice_tables_never_run(hostile_records_app, browser, listener):
    url, bad = hostile_records_app
    q = urllib.parse.quote
    for address in (f"{url}/Results?by=task&map=1&slice={q('task:' + bad['img-id'])}",
                    f"{url}/Results?by=pattern&slice=pattern%3Awrong_endpoint",
                    f"{url}/Failure_cases?by=task&slice={q('task:' + bad['svg-id'])}"):
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(address)
        _settle(page)
        page.locator("[class*='st-key-tbl_'][class*='_slices_']").first.wait_for(timeout=60_000)
        assert not _pwned(page) and not dialogs, address
        if "slice=task" in address:  # the slice named above the episodes, as text
            page.get_by_text("Episodes below:", exact=False).first.wait_for(timeout=30_000)
        page.close()
    assert listener.drained_hits() == [], f"the page made requests with dataset strings: {listener.hits}"
