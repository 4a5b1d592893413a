// The graph drawing in a frame of the page that reports a click on a step (its action id) to Python: a
// st.components.v2 component (app/components/graph/network.py), so that clicking a step can re-centre the plan
// graph. data: the frame's HTML, its digest (a new drawing replaces the frame) and its height.
export default function ({ parentElement, data, setTriggerValue }) {
  let frame = parentElement.querySelector("iframe.kepp-graph");
  if (!frame || frame.dataset.digest !== data.digest) {
    if (frame) frame.remove();
    frame = document.createElement("iframe");
    frame.className = "kepp-graph";
    frame.dataset.digest = data.digest;
    frame.style.cssText = `width:100%;height:${data.height}px;border:0;display:block`;
    frame.srcdoc = data.html;
    parentElement.appendChild(frame);
  }
  const hook = () => {
    const w = frame.contentWindow;
    if (!w || !w.network) return setTimeout(hook, 100);
    if (w.__keppClick) return;
    w.__keppClick = true;
    w.network.on("click", (p) => { if (p.nodes.length) setTriggerValue("node", p.nodes[0]); });
  };
  hook();
}
