// Scroll the page so that cfg.selector is at the top of the window (app/components/scenes.py, once after a
// run: cfg.nonce makes each call a new script). Tries again while the page is still being drawn.
(function (cfg) {
  const doc = (window.parent || window).document;
  let n = 0;
  const go = () => {
    const el = doc.querySelector(cfg.selector);
    if (el) { el.scrollIntoView({block: "start"}); if (++n < 6) setTimeout(go, 250); }
    else if (++n < 40) setTimeout(go, 100);
  };
  setTimeout(go, 50);
})
