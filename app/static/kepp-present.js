// Presentation mode's own script, every page (app/components/ui/config.py).
//
// - A bigger screen shows the same slide bigger: the page is laid out for 1280x720 (its type, its graph's
//   frame) and zoomed by the window's size over that (1.5 at 1920x1080, 3 at 3840x2160; never below 1), so
//   the slide that fits 1280x720 fits every 16:9 projector and its type and graph grow with the screen.
// - A playing slide that runs below the window (its plan's or ground truth's cards under the window's bottom: an
//   A/B slide of T=6) is drawn compact: the page is marked kepp-compact and the presentation CSS sets each
//   card's number beside its name, the rows and the head tighter and an A/B slide's two columns even (the mark
//   is re-decided whenever the page changes, its height changes or the window is resized, measured without it
//   first, so a slide that fits keeps the full cards).
// - While the server is away the audience keeps the
// last slide with a quiet "reconnecting" mark, never Streamlit's developer dialog ("Connection error … streamlit
// run yourscript.py"). The dialog is marked (data-kepp-connection) and the page's CSS hides it; the mark shows
// while Streamlit says it is connecting (its status element, hidden by the same CSS) or such a dialog is there.
// Streamlit closes the dialog itself once the server answers again; the slide stays drawn meanwhile.
//
// cfg: {text: the mark's words, title: the dialog's title as Streamlit writes it, base: [width, height] the
//       page is laid out for}
(function (cfg) {
  const top = window.parent || window;
  if (top.__keppPresent) return;  // once per browser tab
  top.__keppPresent = true;
  const doc = top.document;
  const zoom = () => {
    const z = Math.max(1, Math.min(top.innerWidth / cfg.base[0], top.innerHeight / cfg.base[1]));
    doc.documentElement.style.setProperty("--kepp-zoom", String(z));
  };
  top.addEventListener("resize", zoom);
  zoom();
  const compact = () => {
    // the rows the slide must show: the plan(s) and the ground truth (graph paths below them may run on)
    const cards = [...doc.querySelectorAll('[data-testid="stMain"] .kepp-plan')]
      .filter((row) => /^(plan|ground truth)/.test((row.previousElementSibling || {}).textContent || ""));
    const root = doc.documentElement;
    const playing = !!doc.querySelector(".st-key-playlist_bar") && cards.length > 0;
    root.classList.remove("kepp-compact");
    if (playing && Math.max(...cards.map((c) => c.getBoundingClientRect().bottom)) > top.innerHeight + 1) {
      root.classList.add("kepp-compact");
    }
  };
  let asked = false;
  const fit = () => {  // once a frame, before the browser paints
    if (asked) return;
    asked = true;
    top.requestAnimationFrame(() => { asked = false; compact(); });
  };
  top.addEventListener("resize", fit);
  // and whenever the page's height changes without a change of its tree (an image or a frame that loaded late, a
  // style changed): decided on the last layout, never kept from a moment the slide was taller than it ends
  const sized = new top.ResizeObserver(fit);
  let watched = null;
  const watch = () => {
    const block = doc.querySelector('[data-testid="stMainBlockContainer"]');
    if (block && block !== watched) {
      if (watched) sized.unobserve(watched);
      sized.observe(block);
      watched = block;
    }
  };
  const mark = doc.createElement("div");
  mark.className = "kepp-reconnecting";
  mark.setAttribute("role", "status");
  mark.textContent = cfg.text;
  doc.body.appendChild(mark);
  const look = () => {
    let away = !!doc.querySelector('[data-testid="stConnectionStatus"]');
    doc.querySelectorAll('[data-testid="stDialog"]:not([data-kepp-connection])').forEach((d) => {
      if (d.textContent.trim().startsWith(cfg.title)) d.setAttribute("data-kepp-connection", "");
    });
    away = away || !!doc.querySelector("[data-kepp-connection]");
    mark.classList.toggle("kepp-away", away);
  };
  // before the browser paints what changed: the dialog is never drawn, not even for a frame
  new MutationObserver(() => { look(); watch(); fit(); }).observe(doc.body, {childList: true, subtree: true, characterData: true});
  look();
  watch();
  fit();
})
