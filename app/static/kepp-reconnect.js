// Presentation mode, every page (app/components/config.py): while the server is away the audience keeps the
// last slide with a quiet "reconnecting" mark, never Streamlit's developer dialog ("Connection error … streamlit
// run yourscript.py"). The dialog is marked (data-kepp-connection) and the page's CSS hides it; the mark shows
// while Streamlit says it is connecting (its status element, hidden by the same CSS) or such a dialog is there.
// Streamlit closes the dialog itself once the server answers again; the slide stays drawn meanwhile.
//
// cfg: {text: the mark's words, title: the dialog's title as Streamlit writes it}
(function (cfg) {
  const top = window.parent || window;
  if (top.__keppReconnect) return;  // one watcher per browser tab
  top.__keppReconnect = true;
  const doc = top.document;
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
  new MutationObserver(look).observe(doc.body, {childList: true, subtree: true, characterData: true});
  look();
})
