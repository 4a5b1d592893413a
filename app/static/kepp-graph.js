// A KEPP graph drawing's own script (app/components/graph/network.py writes the frame; the app serves this
// file, the HTML export carries it inline). It reads its settings from the frame's JSON block
// #kepp-graph-data (legend, title, settings, file name, grid, label sizes, colours), written escaped by Python.
//
// - The grid is spread over the canvas (its columns and rows share the width and the height) at the
//   type's size, drawn smaller only when the canvas is too small for the grid or two steps would touch;
//   a drawing smaller than 1x keeps every label at its least size as drawn (its font grown by the inverse
//   of the scale). Re-spread when the frame changes size, until the reader moves or zooms the drawing.
// - Edge labels are drawn by this script, after vis.js has drawn everything else, beside the arrow they
//   label: off every arrow's line and head, off every step and every label placed before them (in rank
//   order: data's ``rank``), at the first free place near the arrow's middle; a label with no free place
//   is left to the arrow's hover text, which carries the same number. window.keppLabels lists the boxes
//   drawn (canvas coordinates), for tests.
// - Step names wrap at spaces only (fitWords): a step's box is at least as wide as its longest word in its drawn
//   font; a word too wide for its column is drawn smaller first (presentation mode: down to its least drawn size),
//   then cut short with "…", the full name in the step's hover text.
// - Keys a presenter's clicker sends are handed to the page around the frame (a click in the drawing
//   gives it the focus: the slide keys must still reach the playlist's listener).
// - keppPng(): the drawing with its title, settings and legend as a PNG.
(function () {
  const cfg = JSON.parse(document.getElementById("kepp-graph-data").textContent);
  const legend = cfg.legend, title = cfg.title, settings = cfg.settings, name = cfg.name, grid = cfg.grid;
  const pad = cfg.pad, edgeSize = cfg.edgeSize, leastEdge = cfg.leastEdge, leastNode = cfg.leastNode;
  // presentation mode: a step's name drawn no smaller than this to keep its words whole; on a slide the page
  // has drawn compact (too tall for the window: kepp-present.js marks it kepp-compact) no smaller than
  // the room's least text size, ``compactNode``
  const shrinkNode = cfg.shrinkNode;
  const compactPage = () => {
    try { return window.parent !== window && window.parent.document.documentElement.classList.contains("kepp-compact"); }
    catch (err) { return false; }  // another origin: not ours to read
  };
  const floorNode = () => (cfg.compactNode && compactPage() ? cfg.compactNode : shrinkNode);
  const colours = cfg.colours;  // the app's colour table (components/colours.py: GRAPH_SCRIPT)
  window.keppLegend = legend;
  let touched = false, scale = 1, tries = 0, arranged = false;

  function arrange(k) {
    const box = document.getElementById("mynetwork"), W = box.clientWidth, H = box.clientHeight;
    if (!grid || !W || !H) return false;
    const nc = grid.cols[1] - grid.cols[0] + 1, nr = grid.rows[1] - grid.rows[0] + 1;
    const colW = W / nc, rowH = H / nr;
    scale = k || Math.min(1, colW / grid.minColumn, rowH / grid.minRow);
    const cy = (grid.rows[0] + grid.rows[1]) / 2, data = network.body.data.nodes;
    // drawn smaller: a step's label keeps the least type size it is read at (presentation mode: the back row's)
    if (leastNode && scale < 1) {
      const px = Math.ceil(leastNode / scale);
      data.update(data.get().filter(n => n.font && n.font.size < px).map(n => ({id: n.id, font: Object.assign({}, n.font, {size: px})})));
    }
    const at = columnsAt(W, nc);  // a grid column -> its centre in the frame (px)
    data.update(data.get().map(n => ({id: n.id, x: (at(n.gx) - W / 2) / scale, y: (n.gy - cy) * rowH / scale})));
    network.moveTo({position: {x: 0, y: 0}, scale: scale, animation: false});
    window.keppScale = scale;
    // a step's box: at most 0.9 of the room it may spread over (half the way to the next step in its row
    // either side, and not past the drawing's edge); set after the type sizes are
    const room = (n) => Math.min(at(n.gx), W - at(n.gx),
                                 ...data.get().filter(o => o.id !== n.id && o.gy === n.gy).map(o => Math.abs(at(o.gx) - at(n.gx)) / 2));
    fitWords(Math.max(40, 0.62 * colW / scale), (n) => 2 * room(n) * (shrinkNode ? TIGHT : 0.9) / scale);
    return true;
  }
  // The grid's columns across a frame ``W`` px wide: as a function from a grid column (fractions between) to its
  // centre in px. Evenly spread, but in presentation mode (``shrinkNode``), where an even share would cut a step's
  // longest word, each column as wide as its steps' longest words need (drawn at their size, or else no smaller
  // than ``shrinkNode``), the rest of the width shared out; none of that fitting, evenly.
  const TIGHT = 0.96;  // presentation mode: a step's box may take this share of its room (else 0.9)
  function columnsAt(W, nc) {
    let widths = Array(nc).fill(W / nc);
    if (shrinkNode) {
      const need = (least) => {  // px per column: its widest word at the size drawn, or at ``least`` drawn
        const cols = Array(nc).fill(0);
        for (const n of network.body.data.nodes.get()) {
          const node = network.body.nodes[n.id], i = Math.round(n.gx) - grid.cols[0];
          if (!node || i < 0 || i >= nc) continue;
          const f = node.labelModule.fontOptions, m = node.options.margin || {}, size = least ? Math.min(f.size, least / scale) : f.size;
          measure.font = `${size}px ${f.face}`.replace(/"/g, "");
          const full = n.full === undefined ? String(n.label === undefined || n.label === null ? "" : n.label) : n.full;
          const word = Math.max(0, ...full.split(" ").map((w) => measure.measureText(w).width));
          cols[i] = Math.max(cols[i], (word + (m.left || 0) + (m.right || 0) + 2) * scale / TIGHT);
        }
        return cols;
      };
      const sum = (xs) => xs.reduce((a, b) => a + b, 0);
      const full = need(0), small = need(floorNode());
      if (full.some((w) => w > W / nc)) {
        const cols = sum(full) <= W ? full : (sum(small) <= W ? small : null);
        if (cols) widths = cols.map((w) => w + (W - sum(cols)) * w / sum(cols));
      }
    }
    const knots = [[grid.cols[0] - 0.5, 0]];
    let edge = 0;
    widths.forEach((w, i) => { knots.push([grid.cols[0] + i, edge + w / 2]); edge += w; });
    knots.push([grid.cols[1] + 0.5, W]);
    return (g) => {
      for (let i = 1; i < knots.length; i++) {
        const [g0, x0] = knots[i - 1], [g1, x1] = knots[i];
        if (g <= g1 || i === knots.length - 1) return x0 + (x1 - x0) * (g - g0) / (g1 - g0);
      }
      return W / 2;
    };
  }
  // Step names wrap at spaces only: vis.js breaks a word wider than a step's widthConstraint mid-word, so each
  // step's box is made at least as wide as its longest word, measured in the font vis.js draws that step in
  // (its size and face as set now; network.py keeps a selected step's out of bold), plus its margins. A word
  // wider than ``most(node)`` (canvas units: the step would crowd its neighbours) is cut short with "…",
  // the full name first in the step's hover text. ``full`` keeps the name for the next arrangement.
  const measure = document.createElement("canvas").getContext("2d");
  function fitWords(least, most) {
    const data = network.body.data.nodes;
    data.update(data.get().filter(n => network.body.nodes[n.id]).map(n => {
      const node = network.body.nodes[n.id], f = node.labelModule.fontOptions, m = node.options.margin || {};
      const full = n.full === undefined ? String(n.label === undefined || n.label === null ? "" : n.label) : n.full;
      measure.font = `${f.size}px ${f.face}`.replace(/"/g, "");  // as vis.js's label module sets it
      const side = (m.left || 0) + (m.right || 0) + 2, room = most(n) - side;
      // presentation mode: a word too wide is first drawn smaller, down to ``floorNode()`` as drawn
      const longest = Math.max(0, ...full.split(" ").map((w) => measure.measureText(w).width));
      let size = f.size;
      if (shrinkNode && longest > room) {
        size = Math.max(Math.ceil(floorNode() / scale), Math.floor(f.size * room / longest));
        measure.font = `${size}px ${f.face}`.replace(/"/g, "");
      }
      const width = (w) => measure.measureText(w).width;
      const words = full.split(" ").map(w => {
        if (width(w) <= room) return w;
        let k = w.length - 1;
        while (k > 1 && width(w.slice(0, k) + "\u2026") > room) k--;
        return w.slice(0, k) + "\u2026";
      });
      const label = words.join(" "), widest = Math.max(0, ...words.map(width)), hover = String(n.title || "");
      const title = label === full || hover.split("\n")[0] === full ? n.title : (hover ? full + "\n" + hover : full);
      const font = size < f.size ? {font: Object.assign({}, n.font, {size: size})} : {};
      return Object.assign({id: n.id, full: full, label: label, title: title,
                            widthConstraint: {maximum: Math.max(shrinkNode ? Math.min(least, most(n)) : least, Math.ceil(widest) + side)}}, font);
    }));
  }
  function spread() { if (!touched && grid) { arranged = false; tries = 0; arrange(); } }
  function fit() { if (!touched && !grid && window.network) network.fit({animation: false, maxZoomLevel: 1}); }
  const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const grow = (b, d) => ({left: b.left - d, right: b.right + d, top: b.top - d, bottom: b.bottom + d});
  function touching() {  // two steps' boxes closer than 3 px
    const boxes = Object.keys(network.body.nodes).filter(id => !network.body.nodes[id].isCluster)
      .map(id => grow(network.getBoundingBox(id), 2));
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) if (overlap(boxes[i], boxes[j])) return true;
    return false;
  }

  // --- edge labels, placed off the arrows ---------------------------------------------------------------
  const SAMPLES = 32;  // points along each arrow (its drawn line is the polyline through them)
  const SPOTS = [0.5, 0.44, 0.56, 0.38, 0.62, 0.32, 0.68, 0.26, 0.74, 0.2, 0.8];  // where along its arrow a label may sit
  const TILTS = [0, 0.6, -0.6, 1.1, -1.1];  // the directions off the arrow tried: square to it, then leaning either way (rad)
  const FAR = [0, 10, 22, 36, 52];  // how much further from the arrow than touching distance (a leader line joins them)
  const GAP = 3;  // px between a label's box and any line, head, step or other label (canvas units)
  const CELL = 48;  // the grid that finds the lines near a box

  // Whether the segment a-b comes within r of the box (the box grown by r: a little conservative at corners).
  function segmentMeets(a, b, box, r) {
    const g = grow(box, r);
    let t0 = 0, t1 = 1;
    const dx = b.x - a.x, dy = b.y - a.y;
    for (const [p, q] of [[-dx, a.x - g.left], [dx, g.right - a.x], [-dy, a.y - g.top], [dy, g.bottom - a.y]]) {
      if (p === 0) { if (q < 0) return false; continue; }
      const t = q / p;
      if (p < 0) { if (t > t1) return false; if (t > t0) t0 = t; } else { if (t < t0) return false; if (t < t1) t1 = t; }
    }
    return true;
  }
  // The arrow head's bounding box (vis.js's arrow: its tip at the point, 0.3 of its length either side).
  function headBox(a) {
    const c = Math.cos(a.angle), s = Math.sin(a.angle), L = a.length;
    const xs = [a.point.x, a.point.x - L * c - 0.3 * L * s, a.point.x - L * c + 0.3 * L * s];
    const ys = [a.point.y, a.point.y - L * s + 0.3 * L * c, a.point.y - L * s - 0.3 * L * c];
    return {left: Math.min(...xs), right: Math.max(...xs), top: Math.min(...ys), bottom: Math.max(...ys)};
  }
  // What a label must keep off, filed by grid cell: every arrow's segments (with its line's half width) and
  // head, and what is placed as it goes (labels, their leader lines).
  function Obstacles() {
    const cells = new Map();
    const keys = (b) => {
      const out = [];
      for (let i = Math.floor(b.left / CELL); i <= Math.floor(b.right / CELL); i++)
        for (let j = Math.floor(b.top / CELL); j <= Math.floor(b.bottom / CELL); j++) out.push(i + "," + j);
      return out;
    };
    const add = (item, b) => keys(b).forEach(k => { if (!cells.has(k)) cells.set(k, []); cells.get(k).push(item); });
    return {
      segment(a, b, half) {
        add({a: a, b: b, half: half}, {left: Math.min(a.x, b.x) - half, right: Math.max(a.x, b.x) + half,
                                       top: Math.min(a.y, b.y) - half, bottom: Math.max(a.y, b.y) + half});
      },
      box(b, solid = true) { add({box: b, solid: solid}, b); },
      // nothing there (``solids``: only steps and labels count, a leader line may cross an arrow)
      free(cand, solids = false) {
        const g = grow(cand, GAP);
        for (const k of keys(grow(g, 8))) for (const o of cells.get(k) || []) {
          if (solids && !o.solid) continue;
          if (o.box ? overlap(g, o.box) : segmentMeets(o.a, o.b, cand, o.half + GAP)) return false;
        }
        return true;
      },
    };
  }
  // Every drawn arrow: its polyline and its line's half width (canvas coordinates), its head among the obstacles.
  function arrows(ctx, obstacles) {
    const out = {};
    for (const id of network.body.edgeIndices) {
      const edge = network.body.edges[id];
      try {
        const via = edge.edgeType.getViaNode(), values = edge.getFormattingValues();
        const pts = [];
        for (let k = 0; k <= SAMPLES; k++) pts.push(edge.edgeType.getPoint(k / SAMPLES, via));
        const half = values.width / 2;
        pts.forEach((p, k) => { if (k) obstacles.segment(pts[k - 1], p, half); });  // segments: not solid
        if (values.toArrow) obstacles.box(headBox(edge.edgeType.getArrowData(ctx, "to", via, false, false, values)), false);
        out[id] = {pts: pts, half: half, loop: edge.fromId === edge.toId};
      } catch (e) { /* an arrow vis.js has not laid out yet: it has no label place either */ }
    }
    return out;
  }
  function place(ctx) {
    const data = network.body.data.edges.get().filter(e => e.klabel && network.body.edges[e.id]);
    data.sort((a, b) => a.rank - b.rank || (a.id < b.id ? -1 : 1));
    const obstacles = Obstacles(), lines = arrows(ctx, obstacles), s = network.getScale();
    const size = leastEdge ? Math.max(edgeSize, Math.ceil(leastEdge / s)) : edgeSize;  // canvas units
    const box = document.getElementById("mynetwork");
    const a = network.DOMtoCanvas({x: 0, y: 0}), b = network.DOMtoCanvas({x: box.clientWidth, y: box.clientHeight});
    const view = {left: a.x, top: a.y, right: b.x, bottom: b.y};
    network.body.nodeIndices.forEach(id => obstacles.box(network.getBoundingBox(id)));
    const kept = [], hidden = [];
    ctx.save();
    ctx.font = `${size}px arial`;
    for (const e of data) {
      const line = lines[e.id];
      if (!line || line.loop) { hidden.push(e.id); continue; }
      const w = ctx.measureText(e.klabel).width + 2 * pad, h = size * 1.2 + 2 * pad;
      const found = spot(line, w, h, view, obstacles);
      if (!found) { hidden.push(e.id); continue; }
      obstacles.box(found);
      if (found.leader) obstacles.segment(found.leader[0], found.leader[1], 1);  // later labels keep off it too
      const colour = typeof e.color === "string" ? e.color : (e.color && e.color.color) || colours.edge;
      kept.push(Object.assign(found, {id: e.id, text: e.klabel, size: size, colour: colour}));
    }
    ctx.restore();
    return {kept: kept, hidden: hidden};
  }
  // The first free box of w x h beside the arrow ``line``: near its middle first, square to it first, touching
  // distance first (its extent across the arrow, the line's half width and a gap); further off, a leader line
  // joins box and arrow, itself clear of steps and labels. Null when none is free.
  function spot(line, w, h, view, obstacles) {
    const n = line.pts.length - 1;
    for (const far of FAR) for (const t of SPOTS) for (const tilt of TILTS) for (const side of [1, -1]) {
      const k = Math.round(t * n), p = line.pts[k];
      const q0 = line.pts[Math.max(0, k - 1)], q1 = line.pts[Math.min(n, k + 1)];
      const len = Math.hypot(q1.x - q0.x, q1.y - q0.y) || 1, tx = (q1.x - q0.x) / len, ty = (q1.y - q0.y) / len;
      const c = Math.cos(tilt), sn = Math.sin(tilt);
      const ux = side * (-ty * c - tx * sn), uy = side * (tx * c - ty * sn);  // the normal, turned by tilt
      const d = Math.abs(ux) * w / 2 + Math.abs(uy) * h / 2 + line.half + GAP + 1 + far;
      const cx = p.x + ux * d, cy = p.y + uy * d;
      const cand = {left: cx - w / 2, right: cx + w / 2, top: cy - h / 2, bottom: cy + h / 2, anchor: {x: p.x, y: p.y}};
      if (cand.left < view.left || cand.right > view.right || cand.top < view.top || cand.bottom > view.bottom) continue;
      if (!obstacles.free(cand)) continue;
      if (far) {  // the leader: from the arrow's edge to the box's nearest point, over nothing else
        const from = {x: p.x + ux * (line.half + 1), y: p.y + uy * (line.half + 1)};
        const to = {x: Math.max(cand.left, Math.min(p.x, cand.right)), y: Math.max(cand.top, Math.min(p.y, cand.bottom))};
        if (!leaderClear(from, to, obstacles)) continue;
        cand.leader = [from, to];
      }
      return cand;
    }
    return null;
  }
  // A leader line crosses no step and no label (it may cross an arrow: a thin line under a label's number).
  function leaderClear(from, to, obstacles) {
    const len = Math.hypot(to.x - from.x, to.y - from.y), n = Math.max(1, Math.ceil(len / 4));
    for (let k = 0; k <= n; k++) {
      if (k * len / n < 2 * GAP + 4) continue;
      const x = from.x + (to.x - from.x) * k / n, y = from.y + (to.y - from.y) * k / n;
      if (!obstacles.free({left: x - 0.5, right: x + 0.5, top: y - 0.5, bottom: y + 0.5}, true)) return false;
    }
    return true;
  }
  function drawLabels(ctx, kept) {
    ctx.save();
    for (const b of kept) {
      if (b.leader) {
        ctx.beginPath(); ctx.moveTo(b.leader[0].x, b.leader[0].y); ctx.lineTo(b.leader[1].x, b.leader[1].y);
        ctx.lineWidth = 1.5; ctx.strokeStyle = b.colour; ctx.setLineDash([]); ctx.stroke();
      }
      const w = b.right - b.left, h = b.bottom - b.top, r = Math.min(6, h / 3);
      ctx.beginPath();
      ctx.moveTo(b.left + r, b.top);
      ctx.arcTo(b.right, b.top, b.right, b.bottom, r); ctx.arcTo(b.right, b.bottom, b.left, b.bottom, r);
      ctx.arcTo(b.left, b.bottom, b.left, b.top, r); ctx.arcTo(b.left, b.top, b.right, b.top, r);
      ctx.closePath();
      ctx.fillStyle = colours.ground; ctx.fill();
      ctx.lineWidth = Math.max(1.5, 0.08 * b.size); ctx.strokeStyle = b.colour; ctx.stroke();
      ctx.fillStyle = colours.ink; ctx.font = `${b.size}px arial`; ctx.textAlign = "center"; ctx.textBaseline = "middle";
      ctx.fillText(b.text, b.left + w / 2, b.top + h / 2 + 1);
    }
    ctx.restore();
  }
  function labels() {
    // the layout: where the steps are, the view's scale and size, the steps' type size and boxes as drawn (a
    // step's box can change in a later update than its place: fitWords runs after the type sizes are set, and
    // vis.js may draw in between)
    const box = document.getElementById("mynetwork");
    const layout = () => JSON.stringify([network.getPositions(), network.getScale(), network.getViewPosition(),
                                         box.clientWidth, box.clientHeight,
                                         network.body.data.nodes.get().map(n => n.font && n.font.size),
                                         network.body.nodeIndices.map(id => network.getBoundingBox(id))]);
    let seen = "", placed = {kept: [], hidden: []}, dragging = false;
    network.on("dragStart", () => { dragging = true; });
    network.on("dragEnd", () => { dragging = false; network.redraw(); });
    network.on("afterDrawing", (ctx) => {
      if (dragging) return;  // placed again where the step is let go
      if (grid && !arranged && !touched) {  // two steps touch: a little smaller, until none does
        if (tries < 12 && touching()) { tries += 1; arrange(scale * 0.9); return; }
        arranged = true;
      }
      window.keppArranged = true;
      const now = layout();
      if (now !== seen) {
        seen = now;
        fit();
        placed = place(ctx);
        window.keppLabels = placed.kept.map(b => ({id: b.id, text: b.text, left: b.left, top: b.top, right: b.right,
                                                   bottom: b.bottom, size: b.size, anchor: b.anchor,
                                                   leader: !!b.leader}));
        window.keppHiddenLabels = placed.hidden.length;
        window.keppPlaced = true;
      }
      drawLabels(ctx, placed.kept);
    });
  }

  // --- the clicker's keys, from inside the frame to the page around it -----------------------------------
  function forwardKeys() {
    if (window.parent === window) return;  // a standalone export: no page around it
    document.addEventListener("keydown", (e) => {
      if (!cfg.slideKeys.includes(e.key) || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
      let target;
      try { target = window.parent.document; } catch (err) { return; }  // another origin: not ours to drive
      e.preventDefault();
      target.dispatchEvent(new KeyboardEvent("keydown", {key: e.key, code: e.code, bubbles: true, cancelable: true}));
    }, true);
  }

  function ready() {
    if (!window.network) return setTimeout(ready, 30);
    network.on("dragStart", () => { touched = true; });
    network.on("zoom", () => { touched = true; });
    new ResizeObserver(() => { spread(); fit(); }).observe(document.getElementById("mynetwork"));
    if (cfg.compactNode) {  // the page turning compact (or back) changes the least size: arrange again
      let was = compactPage();
      try {
        new MutationObserver(() => { const now = compactPage(); if (now !== was) { was = now; spread(); } })
          .observe(window.parent.document.documentElement, {attributes: true, attributeFilter: ["class"]});
      } catch (err) { /* another origin or standalone: no page to follow */ }
    }
    labels();
    if (!arrange()) { fitWords(cfg.stepWidth, () => 2 * cfg.stepWidth); fit(); }  // no grid: the width network.py gave
  }
  forwardKeys();
  ready();

  window.keppPng = function () {
    const src = document.querySelector("#mynetwork canvas"), r = src.width / src.clientWidth || 1;
    const line = 22 * r, head = (settings ? 56 : 36) * r, w = src.width;
    const c = document.createElement("canvas");
    c.width = w; c.height = head + src.height + (legend.length + 1) * line;
    const x = c.getContext("2d");
    x.fillStyle = colours.ground; x.fillRect(0, 0, c.width, c.height);
    x.fillStyle = colours.ink; x.font = `bold ${18 * r}px sans-serif`; x.fillText(title, 10 * r, 24 * r);
    x.font = `${13 * r}px sans-serif`; if (settings) x.fillText(settings, 10 * r, 46 * r);
    x.drawImage(src, 0, head);
    legend.forEach(([style, colour, text], i) => {
      const y = head + src.height + (i + 1) * line;
      x.strokeStyle = colour; x.fillStyle = colour; x.lineWidth = 4 * r;
      x.setLineDash(style === "dashed" ? [8 * r, 6 * r] : style === "dotted" ? [2 * r, 5 * r] : []);
      if (style === "node") x.fillRect(10 * r, y - 12 * r, 30 * r, 14 * r);
      else { x.beginPath(); x.moveTo(10 * r, y - 5 * r); x.lineTo(40 * r, y - 5 * r); x.stroke(); }
      x.fillStyle = colours.ink; x.fillText(text, 50 * r, y);
    });
    const a = document.createElement("a");
    a.download = name + ".png"; a.href = c.toDataURL("image/png");
    document.body.appendChild(a); a.click(); a.remove();
  };
})();
