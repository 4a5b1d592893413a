// The offline deck's script (app/components/talk/deck.py inlines it in the file it writes; no server, no network).
// The slide shown is the number in the address's fragment (talk.html#3; the presenter view: #presenter-3):
// the keys a clicker sends move it (next: data.keys.next and ArrowDown; previous: data.keys.prev and ArrowUp;
// Home, End), a reload or a shared link opens on it. P (or the faint "Notes" button) opens the presenter view,
// the same file in a second window; the two follow each other through window messages, a BroadcastChannel and
// localStorage (whichever the browser allows for a file it opened from disk). Dataset text reaches the page
// as text only (textContent, cloned nodes), never as markup.
//
// The presenter view counts down the talk's length (data.minutes, the playlist's; or set there).
//
// data: {name, count, keys: {next, prev}, notes, titles, id, minutes}
(function (data) {
  document.documentElement.classList.add("js");  // without the script the slides stand one under the other
  const slides = [...document.querySelectorAll("#deck > section.slide")];
  const count = slides.length;
  const presenting = /^#presenter/.test(location.hash);
  const tag = "kepp-deck:" + data.id;
  const next = new Set([...data.keys.next, "ArrowDown"]), prev = new Set([...data.keys.prev, "ArrowUp"]);
  let current = 0, popup = null, channel = null;

  const clamp = (k) => Math.min(Math.max(k, 1), count);
  const asked = (hash) => { const m = /(\d+)$/.exec(hash || ""); return m ? clamp(Number(m[1])) : 1; };
  const fragment = (k) => (presenting ? "#presenter-" : "#") + k;

  function preview(box, k) {
    box.textContent = "";
    if (k > count) return;
    const copy = slides[k - 1].cloneNode(true);
    copy.removeAttribute("id");
    copy.hidden = false;
    box.classList.add("p-frame");
    box.style.aspectRatio = `${window.innerWidth} / ${window.innerHeight}`;
    box.appendChild(copy);
    fit(copy);
    copy.style.transform = `scale(${box.clientWidth / window.innerWidth})`;
  }
  // the speaker's keys (kepp-speaker.js: blank, fullscreen, overview, a number then Enter) move the deck here
  window.__keppDriver = {at: () => current, count: () => count, go: (k) => show(k, true),
                       thumb: (k, box) => preview(box, k)};

  // A slide laid out for the window (any size from 1024x768): every part inside it, the frames at least their
  // CSS minimum (6rem high), the graph drawn at no less than its own size (its names at 20 px or more). Where the
  // left column runs out of room the legend, then the frames, then both go under the graph, and then the same
  // with the step cards compact (a card's number beside its name): the first of these that fits (none fitting,
  // the one that runs out least).
  const LAYOUTS = [false, true].flatMap(compact => [[], ["legend"], ["frames"], ["legend", "frames"]].map(
    moved => ({compact, moved})));
  function overrun(s) {
    const box = s.getBoundingClientRect(), scale = box.width / window.innerWidth || 1;
    let most = 0;
    for (const el of s.querySelectorAll("[data-part]")) {
      const r = el.getBoundingClientRect();
      most = Math.max(most, (r.bottom - box.bottom) / scale, (r.right - box.right) / scale);
    }
    const svg = s.querySelector("svg.graph-svg");
    const m = svg && svg.getScreenCTM(), root = parseFloat(getComputedStyle(document.documentElement).fontSize);
    if (m && svg.getBoundingClientRect().width) most = Math.max(most, (root / 20 - Math.hypot(m.a, m.b) / scale) * 1000);
    return most;
  }
  function place(s, layout) {
    const left = s.querySelector(".left"), right = s.querySelector(".right");
    for (const part of ["legend", "frames"]) {
      const el = s.querySelector(`[data-part=${part}]`);
      if (!el || !left || !right) continue;
      if (layout.moved.includes(part)) right.appendChild(el);
      else if (part === "legend") left.insertBefore(el, left.querySelector("[data-part=frames]"));
      else left.appendChild(el);
    }
    s.classList.toggle("compact", layout.compact);
    s.dataset.layout = [layout.compact ? "compact" : "", ...layout.moved.map(p => p + "-right")].join(" ").trim();
  }
  function fit(s) {
    let best = null;
    for (const layout of LAYOUTS) {
      place(s, layout);
      const over = overrun(s);
      if (over <= 0.5) return;
      if (!best || over < best[0]) best = [over, layout];
    }
    place(s, best[1]);
  }
  window.addEventListener("resize", () => { if (current) fit(slides[current - 1]); });

  function drawPresenter(k) {
    document.getElementById("p-count").textContent = `${k} / ${count}`;
    preview(document.getElementById("p-current"), k);
    preview(document.getElementById("p-next"), k + 1);
    document.getElementById("p-next-head").textContent = k < count ? `Next: ${k + 1}` : "Next: the end";
    const note = document.getElementById("p-note"), text = data.notes[k - 1] || "";
    note.textContent = text || "no note for this slide";
    note.classList.toggle("empty", !text);
  }

  function show(k, tell) {
    k = clamp(k);
    if (location.hash !== fragment(k)) history.replaceState(null, "", fragment(k));
    if (k === current) return;
    current = k;
    slides.forEach((s, i) => { s.hidden = i !== k - 1; });
    if (!presenting) fit(slides[k - 1]);
    document.documentElement.dataset.slide = String(k);
    document.title = `${k} / ${count} · ${data.titles[k - 1] || data.name}`;
    if (presenting) drawPresenter(k);
    if (tell) send(k);
  }

  function send(k) {
    const message = {tag, slide: k};
    try { if (channel) channel.postMessage(message); } catch (e) { /* closed */ }
    for (const w of [window.opener, popup]) {
      try { if (w && !w.closed) w.postMessage(message, "*"); } catch (e) { /* gone */ }
    }
    try { localStorage.setItem(tag, JSON.stringify({slide: k, at: Date.now()})); } catch (e) { /* not allowed */ }
  }

  function heard(message) {
    if (message && message.tag === tag && Number.isInteger(message.slide)) show(message.slide, false);
  }

  try { channel = new BroadcastChannel(tag); channel.onmessage = (e) => heard(e.data); } catch (e) { channel = null; }
  window.addEventListener("message", (e) => heard(e.data));
  window.addEventListener("storage", (e) => {
    if (e.key !== tag || !e.newValue) return;
    try { heard({tag, slide: JSON.parse(e.newValue).slide}); } catch (err) { /* not ours */ }
  });
  window.addEventListener("hashchange", () => show(asked(location.hash), true));

  function openPresenter() {
    popup = window.open(location.href.split("#")[0] + "#presenter-" + current, "kepp-deck-presenter:" + data.id,
                        "width=1280,height=800");
  }
  document.getElementById("open-presenter").addEventListener("click", openPresenter);

  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    if (next.has(e.key)) show(current + 1, true);
    else if (prev.has(e.key)) show(current - 1, true);
    else if (e.key === "Home") show(1, true);
    else if (e.key === "End") show(count, true);
    else if ((e.key === "p" || e.key === "P") && !presenting) openPresenter();
    else return;
    e.preventDefault();
  });

  if (presenting) {
    document.body.classList.add("presenting");
    document.getElementById("presenter").hidden = false;
    const clock = document.getElementById("p-clock");
    let start = Date.now();
    const tick = () => {
      const sec = Math.floor((Date.now() - start) / 1000), m = Math.floor(sec / 60) % 60, h = Math.floor(sec / 3600);
      const ss = String(sec % 60).padStart(2, "0");
      clock.textContent = h ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
    };
    clock.addEventListener("click", () => { start = Date.now(); tick(); });
    setInterval(tick, 1000);
    countdown();
    window.addEventListener("resize", () => drawPresenter(current));
  }
  // the presenter view's countdown: the talk's length (the playlist's minutes, or typed here; kept in this
  // browser), what is left of it, and over time once it has run out
  function countdown() {
    const left = document.getElementById("p-left"), input = document.getElementById("p-minutes");
    const key = tag + ":countdown";
    let saved = null;
    try { saved = JSON.parse(localStorage.getItem(key) || "null"); } catch (e) { saved = null; }
    let minutes = saved ? saved.minutes : data.minutes, end = saved ? saved.end : null;
    const start = () => {
      end = minutes > 0 ? Date.now() + minutes * 60000 : null;
      try { localStorage.setItem(key, JSON.stringify({minutes, end})); } catch (e) { /* not allowed */ }
      tick();
    };
    const tick = () => {
      if (!end) { left.textContent = "no countdown"; left.className = ""; return; }
      const ms = end - Date.now(), sec = Math.ceil(Math.abs(ms) / 1000);
      const text = `${Math.floor(sec / 60)}:${String(sec % 60).padStart(2, "0")}`;
      left.textContent = ms >= 0 ? `${text} left` : `${text} over`;
      left.className = ms < 0 ? "over" : ms < 120000 ? "closing" : "";
    };
    input.value = minutes ? String(minutes) : "";
    input.addEventListener("change", () => { minutes = Math.max(0, Number(input.value) || 0); start(); });
    if (minutes && !end) start();
    tick();
    setInterval(tick, 1000);
  }

  show(asked(location.hash), false);
})
