// A playlist's keys on the Plan page (app/components/playlists.py calls this function with cfg): the keys a
// presenter's clicker sends move to the next or the previous item by clicking the playing bar's buttons.
// The arrows and Space are left to a text field, select box or slider that has the focus (their own keys);
// PageDown and PageUp, what clickers send, are left only to a text field. A graph drawing's frame hands
// these keys to this page (kepp-graph.js): a click in the drawing does not stop the clicker.
//
// The presenter view (another tab of the same browser, app/pages/8_Presenter.py) follows this tab through
// a BroadcastChannel: this tab says where it is ("at": playlist, item, count) whenever that changes or the
// view asks ("hello"), and goes where the view asks ("goto": one step at a time, by the bar's buttons).
//
// cfg: {keys: {next, prev}, buttons: {next, prev}, own, text, channel, playing: {playlist, item, count} or null}
(function (cfg) {
  const top = window.parent || window;
  const say = (msg) => { if (top.__keppChannel) top.__keppChannel.postMessage(msg); };
  top.__keppPlaying = cfg.playing;
  if (!top.__keppPlaylistKeys) {  // one listener per browser tab
    top.__keppPlaylistKeys = true;
    top.__keppGo = function (dir) {
      const button = top.document.querySelector(cfg.buttons[dir]);
      if (!button) return false;  // no playlist playing
      if (!button.disabled) button.click();
      const active = top.document.activeElement;
      if (active && active.blur) active.blur();  // a focused button (or frame) would take the next key itself
      return true;
    };
    top.document.addEventListener("keydown", function (e) {
      if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
      const dir = cfg.keys.next.includes(e.key) ? "next" : cfg.keys.prev.includes(e.key) ? "prev" : null;
      if (!dir) return;
      const paging = e.key === "PageDown" || e.key === "PageUp";
      const target = e.target && e.target.closest ? e.target : null;
      if (target && target.closest(paging ? cfg.text : cfg.own)) return;
      if (!top.__keppPlaying) return;
      top.__keppWanted = null;  // the speaker's own key: no step the presenter view asked for is pending
      if (top.__keppGo(dir)) e.preventDefault();
    }, true);
    if (typeof BroadcastChannel !== "undefined") {
      top.__keppChannel = new BroadcastChannel(cfg.channel);
      top.__keppChannel.onmessage = (m) => {
        const d = m.data || {}, at = top.__keppPlaying;
        if (!at || d.playlist !== at.playlist || !top.document.querySelector(cfg.buttons.next)) return;  // not playing now
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
  if (cfg.playing) {
    say({kind: "at", ...cfg.playing});
    top.__keppStep();
  }
})
