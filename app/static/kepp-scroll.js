// Scroll the page so that cfg.selector is at the top of the window (app/components/talk/scenes.py, once after a
// run: cfg.nonce makes each call a new script). The page is still being drawn when this runs (frames and
// charts grow above and below the mark, later on a busy machine): it scrolls again whenever the mark has
// moved off the top, until the mark has stayed there for a second (100 polls at most, 10-20 s), and stops at once
// when the visitor scrolls, types or clicks (their own scroll wins).
(function (cfg) {
  const win = window.parent || window, doc = win.document;
  let found = 0, still = 0, stopped = false;
  const stop = () => { stopped = true; };
  const events = ["wheel", "touchmove", "keydown", "mousedown"];
  events.forEach(e => win.addEventListener(e, stop, {once: true, passive: true}));
  const done = () => events.forEach(e => win.removeEventListener(e, stop));
  const go = () => {
    if (stopped) return done();
    const el = doc.querySelector(cfg.selector);
    if (!el) return ++found < 100 ? setTimeout(go, 100) : done();
    const margin = parseFloat(getComputedStyle(el).scrollMarginTop) || 0;
    const off = Math.abs(el.getBoundingClientRect().top - margin);
    if (off > 2) { el.scrollIntoView({block: "start"}); still = 0; } else still += 1;
    if (still < 5 && ++found < 100) setTimeout(go, 200); else done();
  };
  setTimeout(go, 50);
})
