// A playlist's keys on the Plan page (app/components/talk/playlists.py calls this function with cfg): the keys a
// presenter's clicker sends move to the next or the previous item (Home and End: the first and the last) by
// clicking the playing bar's buttons.
// The arrows and Space are left to a text field or select box that has the focus (their own keys), and to a
// slider only while it is being dragged: a slider that merely kept the focus after a click must not take →
// and move a clip. PageDown and PageUp (what clickers send), Home and End are left only to a text field. A graph drawing's frame hands
// these keys to this page (kepp-graph.js): a click in the drawing does not stop the clicker.
//
// The presenter view (another tab of the same browser, app/views/8_Presenter.py) follows this tab through
// a BroadcastChannel: this tab says where it is ("at": playlist, item, count) whenever that changes or the
// view asks ("hello"), and goes where the view asks ("goto": one step at a time, by the bar's buttons).
//
// A server restart under the page leaves the page as it was: the button found at key time is this page's, and
// the bar makes the move itself in a session that never drew it (components/playlists.py).
//
// cfg: {keys: {next, prev, first, last}, buttons: {the same moves}, own, text, sliders, channel,
//       playing: {playlist, item, count} or null}
(function (cfg) {
  const top = window.parent || window;
  const say = (msg) => { if (top.__keppChannel) top.__keppChannel.postMessage(msg); };
  top.__keppPlaying = cfg.playing;
  if (!top.__keppPlaylistKeys) {  // one listener per browser tab
    top.__keppPlaylistKeys = true;
    // The bar's button of a move, found when the key comes, never kept: the one in this run's elements (not
    // marked stale) that is drawn (Streamlit keeps an undrawn copy of a button with a tooltip; Home and End's
    // buttons are never drawn).
    top.__keppButton = function (dir) {
      const all = [...top.document.querySelectorAll(cfg.buttons[dir])].filter(b => !b.closest('[data-stale="true"]'));
      const drawn = all.filter(b => b.getClientRects().length);
      return drawn[drawn.length - 1] || all[all.length - 1] || null;
    };
    // While a move's run draws the next slide, what the last run drew is hidden (never the old slide under the
    // new number, nor Streamlit's "Running..." on the room's screen): the page is marked kepp-moving from the key
    // until the script's run has ended (stApp's run state), and presentation mode's CSS hides stale elements then.
    const root = top.document.documentElement;
    top.__keppMoving = function () {
      root.classList.add("kepp-moving");
      const app = top.document.querySelector('[data-testid="stApp"]');
      if (!app || top.__keppMoveWatch) return;
      let seenRunning = false;
      // a quick run goes running -> notRunning within one batch of records: its old value says it ran
      top.__keppMoveWatch = new MutationObserver((records) => {
        const state = app.dataset.testScriptState;
        if (state === "running" || records.some(r => r.oldValue === "running")) seenRunning = true;
        if (state !== "running" && seenRunning && root.classList.contains("kepp-moving")) {
          root.classList.remove("kepp-moving");
          seenRunning = false;
        }
      });
      top.__keppMoveWatch.observe(app, {attributes: true, attributeOldValue: true, attributeFilter: ["data-test-script-state"]});
    };
    // A key that comes while a run redraws the page (the bar's buttons of the last run marked stale, this run's not
    // drawn yet: a slow machine, a click in the graph that reruns the page) is kept and made once the run has
    // ended, never lost in front of the room; a later key replaces it.
    top.__keppLater = function (dir) {
      const app = top.document.querySelector('[data-testid="stApp"]');
      if (!app || app.dataset.testScriptState !== "running") return false;
      top.__keppPending = dir;
      if (!top.__keppPendingWatch) {
        top.__keppPendingWatch = new MutationObserver(() => {
          if (app.dataset.testScriptState === "running") return;
          top.__keppPendingWatch.disconnect();
          top.__keppPendingWatch = null;
          const pending = top.__keppPending;
          top.__keppPending = null;
          if (pending) top.__keppGo(pending, true);
        });
        top.__keppPendingWatch.observe(app, {attributes: true, attributeFilter: ["data-test-script-state"]});
      }
      return true;
    };
    top.__keppGo = function (dir, again) {
      const button = top.__keppButton(dir);
      if (!button) return again ? false : top.__keppLater(dir);  // no playlist playing (or its bar being redrawn)
      top.__keppPending = null;
      if (!button.disabled) { top.__keppMoving(); button.click(); }
      const active = top.document.activeElement;
      if (active && active.blur) active.blur();  // a focused button (or frame) would take the next key itself
      return true;
    };
    // a slider is dragged while a pointer is down on it
    top.document.addEventListener("pointerdown", (e) => {
      top.__keppDragging = !!(e.target && e.target.closest && e.target.closest(cfg.sliders));
    }, true);
    top.document.addEventListener("pointerup", () => { top.__keppDragging = false; }, true);
    top.document.addEventListener("pointercancel", () => { top.__keppDragging = false; }, true);
    top.document.addEventListener("keydown", function (e) {
      if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
      const dir = Object.keys(cfg.keys).find(d => cfg.keys[d].includes(e.key));
      if (!dir) return;
      const paging = ["PageDown", "PageUp", "Home", "End"].includes(e.key);  // a text field's own keys
      const target = e.target && e.target.closest ? e.target : null;
      if (target && target.closest(paging ? cfg.text : cfg.own)) return;
      if (!top.__keppPlaying) return;
      if (target && target.closest(cfg.sliders)) {
        if (top.__keppDragging) return;  // the slider being dragged keeps its arrows
        e.stopPropagation();  // a slider that merely has the focus: the slide moves, the slider does not
      }
      top.__keppWanted = null;  // the speaker's own key: no step the presenter view asked for is pending
      if (top.__keppGo(dir)) e.preventDefault();
    }, true);
    if (typeof BroadcastChannel !== "undefined") {
      top.__keppChannel = new BroadcastChannel(cfg.channel);
      top.__keppChannel.onmessage = (m) => {
        const d = m.data || {}, at = top.__keppPlaying;
        if (!at || d.playlist !== at.playlist || !top.__keppButton("next")) return;  // not playing now
        if (d.kind === "hello") say({kind: "at", ...at});
        if (d.kind === "goto" && Number.isInteger(d.item)) { top.__keppWanted = d.item; top.__keppStep(); }
      };
    }
    // one step towards the item the presenter view asked for; the next step once this tab is there
    top.__keppStep = function () {
      const at = top.__keppPlaying, want = top.__keppWanted;
      if (!at || want == null || want === at.item || want < 1 || want > at.count) { top.__keppWanted = null; return; }
      if (top.__keppSteppedFrom === at.item) return;  // a step from here is on its way
      top.__keppSteppedFrom = at.item;
      top.__keppGo(want > at.item ? "next" : "prev");
    };
  }
  // the speaker's keys (kepp-speaker.js: blank, fullscreen, overview, a number then Enter) move the talk here: a
  // jump is the playlist's place in the address (?playlist=NAME&item=K), which draws that item's own slide
  top.__keppDriver = cfg.playing ? {
    at: () => (top.__keppPlaying || {}).item || 1,
    count: () => (top.__keppPlaying || {}).count || 0,
    go: (k) => {
      const at = top.__keppPlaying;
      if (!at || k === at.item) return;
      const q = new URLSearchParams({playlist: at.playlist, item: String(k)});
      if (new URLSearchParams(top.location.search).get("present")) q.set("present", "1");
      top.location.assign(top.location.pathname + "?" + q.toString());
    },
    thumb: (k, box) => { box.textContent = String(k); box.classList.add("kepp-thumb-number"); },
  } : null;
  if (cfg.playing) {
    say({kind: "at", ...cfg.playing});
    top.__keppStep();
  }
})
