// The keys speakers expect (reveal.js's), one script for the offline deck (app/components/talk/deck.py inlines it)
// and the live slides (app/components/talk/playlists.py calls it on the Plan page while a playlist plays):
// B or . blank the screen (again: back), F fullscreen, O or Esc an overview of the slides (click one to go there),
// a number then Enter jumps to that slide, ? lists the keys. Where it moves, it asks the page's driver,
// top.__keppDriver = {at(): the slide shown (1-based), count(): how many, go(k): show slide k, thumb(k, box):
// draw slide k small into box (or write its title)}. Keys typed into a text field are the field's.
//
// cfg: {keys: {blank, fullscreen, overview, help}: [key, ...], help: [[keys, what], ...], titles: [title, ...],
//       own: selector of widgets that keep their keys}
(function (cfg) {
  const top = window.parent || window;
  top.__keppSpeakerTitles = cfg.titles;
  if (top.__keppSpeaker) return;  // one listener per browser tab
  top.__keppSpeaker = true;
  const doc = top.document;
  const has = (what, key) => (cfg.keys[what] || []).includes(key);

  function layer(id) {
    let el = doc.getElementById(id);
    if (!el) {
      el = doc.createElement("div");
      el.id = id;
      el.className = "kepp-layer";
      el.hidden = true;
      doc.body.appendChild(el);
    }
    return el;
  }
  const shown = (id) => { const el = doc.getElementById(id); return !!el && !el.hidden; };
  const close = (id) => { const el = doc.getElementById(id); if (el) el.hidden = true; };

  function blank() {
    const el = layer("kepp-blank");
    el.hidden = !el.hidden;
  }

  function fullscreen() {
    if (doc.fullscreenElement) { if (doc.exitFullscreen) doc.exitFullscreen().catch(() => {}); }
    else if (doc.documentElement.requestFullscreen) doc.documentElement.requestFullscreen().catch(() => {});
  }

  function overview() {
    const el = layer("kepp-overview"), driver = top.__keppDriver;
    if (!el.hidden || !driver) { el.hidden = true; return; }
    el.textContent = "";
    const grid = doc.createElement("ol");
    grid.className = "kepp-overview-grid";
    for (let k = 1; k <= driver.count(); k++) {
      const cell = doc.createElement("li"), button = doc.createElement("button"), box = doc.createElement("div");
      button.type = "button";
      button.dataset.n = String(k);
      button.className = k === driver.at() ? "kepp-here" : "";
      box.className = "kepp-thumb";
      const label = doc.createElement("span");
      label.className = "kepp-thumb-label";
      label.textContent = `${k}  ${(top.__keppSpeakerTitles || [])[k - 1] || ""}`;
      button.append(box, label);
      button.addEventListener("click", () => { el.hidden = true; driver.go(k); });
      cell.appendChild(button);
      grid.appendChild(cell);
    }
    el.appendChild(grid);
    el.hidden = false;
    grid.querySelectorAll(".kepp-thumb").forEach((box, i) => driver.thumb(i + 1, box));
    const here = grid.querySelector(".kepp-here");
    if (here) { here.scrollIntoView({block: "nearest"}); here.focus(); }
  }

  function help() {
    const el = layer("kepp-help");
    if (!el.hidden) { el.hidden = true; return; }
    el.textContent = "";
    const box = doc.createElement("div"), head = doc.createElement("h2"), table = doc.createElement("table");
    box.className = "kepp-help-box";
    head.textContent = "Keys";
    for (const [keys, what] of cfg.help) {
      const row = table.insertRow();
      row.insertCell().textContent = keys;
      row.insertCell().textContent = what;
    }
    box.append(head, table);
    el.appendChild(box);
    el.hidden = false;
  }

  let typed = "";
  function jumpMark() {
    const el = layer("kepp-jump");
    el.textContent = typed ? `go to ${typed} (Enter)` : "";
    el.hidden = !typed;
  }

  doc.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const t = e.target && e.target.closest ? e.target : null;
    if (t && cfg.own && t.closest(cfg.own)) return;
    const driver = top.__keppDriver;
    if (!driver) return;
    const key = e.key;
    if (/^[0-9]$/.test(key)) { typed = (typed + key).slice(-4); jumpMark(); }
    else if (key === "Enter" && typed) {
      const k = Number(typed);
      typed = ""; jumpMark();
      close("kepp-overview");
      if (k >= 1 && k <= driver.count()) driver.go(k);
    } else if (key === "Escape" && (shown("kepp-help") || typed)) { close("kepp-help"); typed = ""; jumpMark(); }
    else if (has("blank", key)) blank();
    else if (has("fullscreen", key)) fullscreen();
    else if (has("overview", key)) overview();
    else if (has("help", key)) help();
    else { if (typed) { typed = ""; jumpMark(); } return; }
    e.preventDefault();
    e.stopImmediatePropagation();
  }, true);
})
