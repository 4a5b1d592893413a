// The presenter view's controls (app/views/8_Presenter.py, a st.components.v2 component): the elapsed time,
// previous / next, and the link to the tab that plays the slides (another tab of this browser, through a
// BroadcastChannel; app/static/kepp-keys.js is the other end). The keys a presenter's clicker sends move
// both: this view asks the slides' tab to go to an item ("goto") and shows it; the slides' tab says where it
// is ("at") whenever that changes, and this view follows (a trigger value "goto" reruns the page there).
//
// A countdown beside the clock: the talk's length from the playlist (data.minutes) or typed into "talk minutes".
//
// data: {playlist, item (1-based), count, channel, keys: {next, prev, first, last}, own (selectors of widgets that keep
// their keys), minutes (the talk's length, or null)}
export default function ({ parentElement, data, setTriggerValue }) {
  let s = parentElement.__kepp;
  if (!s || s.playlist !== data.playlist) {
    if (s) s.close();
    s = parentElement.__kepp = {playlist: data.playlist, item: data.item, pending: null};
    parentElement.innerHTML = `
      <div class="kepp-presenter" style="display:flex;align-items:center;gap:14px;font-family:sans-serif;flex-wrap:wrap">
        <button type="button" data-go="-1" style="font-size:22px;padding:2px 14px">◀</button>
        <span class="kepp-place" style="font-size:22px;font-weight:600"></span>
        <button type="button" data-go="1" style="font-size:22px;padding:2px 14px">▶</button>
        <span style="font-size:20px">elapsed <b class="kepp-clock" style="font-size:26px;font-variant-numeric:tabular-nums">0:00</b></span>
        <button type="button" class="kepp-restart" style="font-size:20px">Restart the clock</button>
        <b class="kepp-left" style="font-size:26px;font-variant-numeric:tabular-nums"></b>
        <label style="font-size:20px">talk minutes <input class="kepp-minutes" type="number" min="0" max="600" step="1"
          style="width:4em;font-size:20px"></label>
        <span class="kepp-follow" style="font-size:20px;color:var(--kepp-muted)"></span>
      </div>`;
    const q = (sel) => parentElement.querySelector(sel);
    const clockKey = "kepp-talk-start:" + data.playlist;
    const now = () => Date.now();
    if (!sessionStorage.getItem(clockKey)) sessionStorage.setItem(clockKey, String(now()));
    const tick = () => {
      const sec = Math.max(0, Math.floor((now() - Number(sessionStorage.getItem(clockKey))) / 1000));
      const h = Math.floor(sec / 3600), m = Math.floor(sec / 60) % 60, ss = String(sec % 60).padStart(2, "0");
      q(".kepp-clock").textContent = h ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
      q(".kepp-follow").textContent = s.seen && now() - s.seen < 600000
        ? "following the slides' tab" : "no slides' tab heard from yet: open the slides (Present) in this browser";
    };
    // the countdown: the talk's length (the playlist's minutes, or typed here; kept in this tab), what is left
    const countKey = "kepp-talk-countdown:" + data.playlist;
    let count = null;
    try { count = JSON.parse(sessionStorage.getItem(countKey) || "null"); } catch (e) { count = null; }
    if (!count && data.minutes) count = {minutes: data.minutes, end: now() + data.minutes * 60000};
    const startCount = (minutes) => {
      count = minutes > 0 ? {minutes, end: now() + minutes * 60000} : null;
      sessionStorage.setItem(countKey, JSON.stringify(count));
      left();
    };
    const left = () => {
      const el = q(".kepp-left");
      if (!count) { el.textContent = "no countdown"; el.style.color = ""; return; }
      const ms = count.end - now(), sec = Math.ceil(Math.abs(ms) / 1000);
      el.textContent = `${Math.floor(sec / 60)}:${String(sec % 60).padStart(2, "0")} ${ms >= 0 ? "left" : "over"}`;
      el.style.color = ms < 120000 ? "var(--kepp-wrong)" : "";
    };
    q(".kepp-minutes").value = count ? String(count.minutes) : "";
    q(".kepp-minutes").addEventListener("change", (e) => startCount(Math.max(0, Number(e.target.value) || 0)));
    left();
    const timer = setInterval(() => { tick(); left(); }, 1000);
    const channel = typeof BroadcastChannel !== "undefined" ? new BroadcastChannel(data.channel) : null;
    // show item k here (a rerun of the page), and ask the slides' tab to go there too
    s.go = (k, tell) => {
      if (!Number.isInteger(k) || k < 1 || k > s.count || k === s.item) return;
      s.item = k; s.pending = {item: k, at: now()};
      q(".kepp-place").textContent = `${k} / ${s.count}`;
      if (tell && channel) channel.postMessage({kind: "goto", playlist: s.playlist, item: k});
      s.trigger("goto", k);
    };
    parentElement.querySelectorAll("button[data-go]").forEach(b => b.addEventListener("click", () => s.go(s.item + Number(b.dataset.go), true)));
    q(".kepp-restart").addEventListener("click", () => { sessionStorage.setItem(clockKey, String(now())); tick(); });
    const onKey = (e) => {
      if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
      const to = {next: s.item + 1, prev: s.item - 1, first: 1, last: s.count};
      const dir = Object.keys(to).find(d => (s.keys[d] || []).includes(e.key));
      const t = e.target && e.target.closest ? e.target : null;
      if (!dir || (t && t.closest(s.own))) return;
      e.preventDefault();
      s.go(to[dir], true);
    };
    document.addEventListener("keydown", onKey, true);
    if (channel) {
      channel.onmessage = (m) => {
        const d = m.data || {};
        if (d.kind !== "at" || d.playlist !== s.playlist) return;
        s.seen = now();
        tick();
        if (d.item !== s.item) s.go(d.item, false);
      };
      channel.postMessage({kind: "hello", playlist: data.playlist});
    }
    s.close = () => { clearInterval(timer); document.removeEventListener("keydown", onKey, true); if (channel) channel.close(); };
    tick();
  }
  s.trigger = setTriggerValue;
  s.keys = data.keys; s.own = data.own; s.count = data.count;
  // the page's item, unless a move asked for here is still on its way (its rerun not drawn yet)
  if (!(s.pending && data.item !== s.pending.item && Date.now() - s.pending.at < 5000)) {
    s.item = data.item; s.pending = null;
  }
  parentElement.querySelector(".kepp-place").textContent = `${s.item} / ${s.count}`;
}
