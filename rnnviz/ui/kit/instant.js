// A control that answers in the browser (rnnviz.ui.kit.instant): the server sends what the page shows at every stop
// of the control at once, and a move shows its stop in the same frame: the stop's numbers, equations and sentences
// under the control, and the stop's frame in every plotly chart that follows it (plotly's own frames). The address
// takes the stop at once; the server hears of it once the control has been still for a moment. Nothing here
// computes a number: every text and figure is the server's, picked by the stop's index.

const KEYS = { Home: "first", ArrowLeft: "back", ArrowRight: "step", End: "end" };

const html = (tag, className, parent) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (parent) parent.appendChild(node);
  return node;
};

// KaTeX from Streamlit's own bundle on the same server (one module, loaded once per page). Streamlit ships two
// KaTeX builds: st.latex's (0.16, inside its markdown renderer, whose stylesheet the page carries) and a newer one as
// a module of its own (0.18, for diagrams), which is the one a component can import. 0.18 names some of its classes
// with a "katex-" prefix that 0.16's stylesheet does not know: they are renamed back, so that the page's own KaTeX
// styles draw the view's equations as they draw st.latex's.
const RENAMED = new Set(["accent", "base", "fix", "hdashline", "hline", "inner", "newline", "overlay", "overline",
  "root", "rule", "sizing", "smash", "sout", "stretchy", "strut", "tag", "thinbox", "underline", "vbox"]);
let katex = null;
let katexLoading = null;

function loadKatex(name, whenLoaded) {
  if (!name) return;
  if (!katexLoading) {
    const index = document.querySelector('script[src*="/static/js/index."]');
    const url = globalThis.rnnvizLesson ? globalThis.rnnvizLesson.katex  // a lesson file on disk (kit.lesson)
      : index ? new URL(name, index.src).href : new URL(`static/js/${name}`, document.baseURI).href;
    katexLoading = import(url).then((module) => { katex = module.default; }).catch(() => {});
  }
  katexLoading.then(() => { if (katex) whenLoaded(); });
}

function renameClasses(node) {
  for (const element of node.querySelectorAll('[class*="katex-"]')) {
    for (const name of [...element.classList]) {
      if (name.startsWith("katex-") && RENAMED.has(name.slice(6))) element.classList.replace(name, name.slice(6));
    }
  }
}

function math(source, parent, display) {
  const node = html(display ? "div" : "span", display ? "rnnviz-instant-latex" : "", parent);
  if (katex) {
    try {
      katex.render(source, node, { displayMode: display, throwOnError: false,
                                   ...(globalThis.rnnvizLesson && globalThis.rnnvizLesson.katexOptions) });
      renameClasses(node);
      return node;
    } catch (err) { /* drawn as its source below */ }
  }
  node.textContent = display ? source : `$${source}$`;
  return node;
}

// Text with **bold** and $inline math$, drawn as text nodes (never parsed as HTML).
function rich(source, parent) {
  for (const part of String(source).split(/(\$[^$]+\$)/)) {
    if (part.length > 2 && part.startsWith("$") && part.endsWith("$")) { math(part.slice(1, -1), parent, false); continue; }
    for (const piece of part.split(/(\*\*[^*]+\*\*)/)) {
      if (piece.length > 4 && piece.startsWith("**") && piece.endsWith("**")) {
        html("strong", "", parent).textContent = piece.slice(2, -2);
      } else if (piece) {
        parent.appendChild(document.createTextNode(piece));
      }
    }
  }
  return parent;
}

// Only colours the server wrote as colours are drawn (#rrggbb or rgb(r, g, b)); anything else is left out.
const COLOUR = /^(#[0-9a-fA-F]{6}|rgb\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\))$/;
const colour = (value) => (typeof value === "string" && COLOUR.test(value) ? value : "");

// Characters start … end − 1 of a coloured text the control's shared data holds (colortext.coloured_chars), under
// its legend (colortext.legend_data) and the stop's words: one span per character, as colored_text_html draws it.
function coloured(item, parent, shared) {
  const source = shared && shared[item.coloured];
  if (!source) return;
  const box = html("div", "rnnviz-instant-colouring", parent);
  const legend = html("div", "rnnviz-instant-legend", box);
  html("div", "rnnviz-instant-legend-label", legend).textContent = item.label;
  const scale = source.legend || {};
  const row = html("div", "rnnviz-instant-legend-row", legend);
  const bar = html("div", "", row);
  const swatches = html("div", "rnnviz-instant-swatches", bar);
  for (const swatch of scale.swatches || []) html("span", "rnnviz-instant-swatch", swatches).style.background = colour(swatch);
  const numbers = html("div", "rnnviz-instant-numbers", bar);
  numbers.style.width = `${22 * (scale.swatches || []).length}px`;
  for (const value of scale.numbers || []) html("span", "", numbers).textContent = value;
  html("div", "rnnviz-instant-meaning", row).textContent = scale.meaning || "";
  const palette = (source.palette || []).map(colour);
  const breaks = new Set(source.breaks || []);
  const text = html("div", "rnnviz-instant-coloured", box);
  const spans = document.createDocumentFragment();
  const end = Math.min(item.end, source.glyphs.length);
  for (let t = Math.max(item.start, 0); t < end; t++) {
    const span = html("span", "", spans);
    span.textContent = source.glyphs[t];
    span.style.background = palette[source.background[t]] || "";
    span.style.color = palette[source.foreground[t]] || "";
    span.title = source.tips[t];
    if (breaks.has(t)) html("br", "", spans);
  }
  text.appendChild(spans);
}

// Only a PNG the server encoded is shown (a data: address of base64 text); sizes are whole numbers of pixels.
const PNG = /^data:image\/png;base64,[A-Za-z0-9+/]+={0,2}$/;
const pixels = (value) => (Number.isInteger(value) && value > 0 && value < 100000 ? String(value) : "");

// A picture as st.image draws it, its caption under it (image in instant.py).
function picture(item, parent) {
  const box = html("figure", "rnnviz-instant-figure", parent);
  if (typeof item.image === "string" && PNG.test(item.image)) {
    const img = html("img", "rnnviz-instant-image", box);
    img.alt = item.alt || "";
    for (const name of ["width", "height"]) if (pixels(item[name])) img.setAttribute(name, pixels(item[name]));
    // drawn at the size asked for, not the PNG's own shape (a strip comes one pixel per value)
    if (pixels(item.width) && pixels(item.height)) img.style.aspectRatio = `${item.width} / ${item.height}`;
    img.src = item.image;
  }
  if (item.caption) rich(item.caption, html("figcaption", "rnnviz-instant-caption", box));
}

// A table of coloured cells with a text on hover each (heat_table in instant.py).
function heatTable(item, parent) {
  const box = html("div", "rnnviz-instant-heat", parent);
  const table = html("table", "", box);
  const head = html("tr", "", table);
  html("th", "", head);
  const columns = item.columns || [];
  for (const [name, under] of columns) {
    const cell = html("th", "", head);
    cell.textContent = name;
    if (under) { html("br", "", cell); html("small", "", cell).textContent = under; }
  }
  const width = pixels(item.cell_px);
  // The hover text: the server's words, its {row}, {column} and {value} replaced by the server's names and value.
  const hover = (row, column, value) => String(item.hover || "").replace(/\{(row|column|value)\}/g,
    (_, part) => String({ row: row.label, column: column ? column[2] : "", value }[part]));
  for (const row of item.rows || []) {
    const line = html("tr", "", table);
    html("th", "row", line).textContent = row.label;
    (row.cells || []).forEach(([fill, value], i) => {
      const cell = html("td", "", line);
      if (width) cell.style.width = `${width}px`;
      cell.style.background = colour(fill);
      cell.title = hover(row, columns[i], value);
    });
  }
  if (item.key) html("div", "rnnviz-instant-caption", box).textContent = item.key;
}

function block(item, parent, shared) {
  if (item.coloured !== undefined) {
    coloured(item, parent, shared);
  } else if (item.image !== undefined) {
    picture(item, parent);
  } else if (item.heat_table) {
    heatTable(item.heat_table, parent);
  } else if (item.metrics) {
    const row = html("div", "rnnviz-instant-metrics", parent);
    const widths = item.widths || item.metrics.map(() => 1);
    row.style.gridTemplateColumns = widths.map((w) => `minmax(0, ${w}fr)`).join(" ");
    for (const [label, value] of item.metrics) {
      const box = html("div", "rnnviz-instant-metric", row);
      rich(label, html("div", "rnnviz-instant-metric-label", box));
      html("div", "rnnviz-instant-metric-value", box).textContent = value;
    }
  } else if (item.latex !== undefined) {
    math(item.latex, parent, true);
  } else if (item.columns) {
    const row = html("div", "rnnviz-instant-columns", parent);
    for (const part of item.columns) {
      const column = html("div", "rnnviz-instant-column", row);
      for (const inner of part) block(inner, column, shared);
    }
  } else if (item.alert) {
    const box = html("div", `rnnviz-instant-alert ${item.alert}`, parent);
    box.setAttribute("role", item.alert === "warning" ? "alert" : "status");
    rich(item.text, box);
  } else if (item.caption !== undefined) {
    rich(item.caption, html("div", "rnnviz-instant-caption", parent));
  } else if (item.text !== undefined) {
    rich(item.text, html("div", "rnnviz-instant-text", parent));
  }
}

// Every chart that follows this control: Streamlit's plotly charts keyed <key>_figure_<name>.
function charts(prefix) {
  return [...document.querySelectorAll(`[class*="st-key-${prefix}"] .js-plotly-plot`)];
}

// Draw stop ``wanted``'s frame in the chart: the frame holds the stop's whole figure, drawn with Plotly.react
// (animate would merge it into the figure shown, keeping what the stop leaves out), themed as Streamlit themes a
// figure (its PlotlyChart: the template it wrote into the chart, a title in bold); the chart keeps its width and its
// config. One drawing at a time per chart (a second react on a table before the first is done breaks plotly's
// table): a stop asked for meanwhile is drawn next, the latest only.
function redraw(gd, chart, wanted, labels) {
  if (gd.__instantBusy) { gd.__instantNext = wanted; return; }
  const frame = gd._transitionData._frameHash[String(wanted)];
  if (!frame) return;
  const copy = JSON.parse(JSON.stringify({ data: frame.data, layout: frame.layout }));
  const layout = { ...copy.layout, template: gd.layout.template, width: gd.layout.width,
                   height: copy.layout.height ?? gd.layout.height };
  const title = layout.title;
  if (title && typeof title === "object" && typeof title.text === "string" && !title.text.startsWith("<b>")) {
    layout.title = { ...title, text: `<b>${title.text}</b>` };
  }
  gd.__instantBusy = true;
  let drawn;
  try {
    drawn = window.Plotly.react(gd, { data: copy.data, layout, config: gd._context,
                                      frames: gd._transitionData._frames });
  } catch (err) {
    drawn = Promise.reject(err);
  }
  Promise.resolve(drawn).then(() => {
    if (chart && layout.meta && layout.meta.alt) chart.setAttribute("aria-label", layout.meta.alt);
    if (chart) chart.dataset.instantShown = labels[wanted];  // the stop the chart draws now (tests, the bench)
  }).catch(() => {}).then(() => {
    gd.__instantBusy = false;
    const next = gd.__instantNext;
    gd.__instantNext = undefined;
    if (next !== undefined && next !== wanted) redraw(gd, chart, next, labels);
  });
}

// Show the stop in every following chart that plotly has drawn; true when each of them is drawing it (a chart
// plotly has not drawn yet is tried again later).
function showFrames(state) {
  let done = true;
  for (const gd of charts(state.data.figures)) {
    if (!window.Plotly || !gd._fullLayout || !gd._transitionData) { done = false; continue; }
    const chart = gd.closest("[data-testid='stPlotlyChart']");
    const drawn = gd.layout && gd.layout.meta ? gd.layout.meta.index : undefined;
    // (written only when it differs: a write of the same value is still a change that observers of the page see)
    const label = state.data.labels[drawn];
    if (gd.__instantWanted === undefined && chart && chart.dataset.instantShown !== label) {
      chart.dataset.instantShown = label;
    }
    if ((gd.__instantWanted ?? drawn) === state.index) continue;
    gd.__instantWanted = state.index;
    redraw(gd, chart, state.index, state.data.labels);
  }
  return done;
}

// Until every following chart shows the stop: plotly's bundle loads lazily and may draw a chart seconds after the
// page's run (looked at in every frame for two seconds). A chart drawn anew later (a run of the page, a chart drawn
// after the control) is found by a look every 300 ms while the view is on the page.
function syncFrames(state) {
  cancelAnimationFrame(state.framesFrame);
  let tries = 0;
  const attempt = () => {
    if (showFrames(state) || state.stopped) return;
    if (++tries < 120) state.framesFrame = requestAnimationFrame(attempt);
  };
  attempt();
  if (!state.framesTimer) state.framesTimer = setInterval(() => { if (!state.stopped) showFrames(state); }, 300);
}

// The stop's text as the address writes it, in place of the parameter's old one (the others keep their spelling).
function writeAddress(data, index) {
  if (!data.param || !data.texts) return;
  const name = encodeURIComponent(data.param);
  const value = encodeURIComponent(data.texts[index]).replace(/%2C/g, ",");
  const parts = window.location.search.replace(/^\?/, "").split("&").filter(Boolean);
  const at = parts.findIndex((part) => part.split("=")[0] === name);
  if (at >= 0) parts[at] = `${name}=${value}`; else parts.push(`${name}=${value}`);
  const search = `?${parts.join("&")}`;
  if (search !== window.location.search) {
    window.history.replaceState(window.history.state, "", `${window.location.pathname}${search}${window.location.hash}`);
  }
}

// Each stop's view is drawn once (its equations take most of a move's time) and kept: a move swaps it in. The views
// are drawn ahead while the page is idle, and again when the server sends other stops or KaTeX arrives. A view with
// a coloured window (thousands of spans, one per character) is drawn when shown and not kept: kept for every stop,
// they would hold the text's characters hundreds of times over.
const heavy = (view) => (view || []).some((item) => item.coloured !== undefined);

function stopView(state, index) {
  let node = state.drawn[index];
  if (!node) {
    node = document.createElement("div");
    node.className = "rnnviz-instant-stop";
    for (const item of state.data.views[index] || []) block(item, node, state.data.shared);
    if (!heavy(state.data.views[index])) state.drawn[index] = node;
  }
  return node;
}

function drawView(state) {
  state.view.replaceChildren(stopView(state, state.index));
}

function drawAhead(state) {
  if (state.ahead) return;
  const idle = window.requestIdleCallback || ((callback) => setTimeout(callback, 50));
  const next = () => {
    state.ahead = null;
    const index = state.data.views.findIndex((view, i) => !state.drawn[i] && !heavy(view));
    if (index >= 0 && !state.stopped) { stopView(state, index); state.ahead = idle(next); }
  };
  state.ahead = idle(next);
}

function drawControl(state) {
  const { data, root } = state;
  const last = data.labels.length - 1;
  if (data.control.kind === "stepper") {
    for (const [move, button] of Object.entries(state.buttons)) {
      button.disabled = (move === "first" || move === "back") ? state.index === 0 : state.index === last;
    }
    state.caption.replaceChildren();
    rich(data.control.caption.replaceAll("{step}", data.labels[state.index]), state.caption);
  } else {
    state.range.max = String(last);
    state.range.value = String(state.index);
    state.range.setAttribute("aria-valuetext", data.labels[state.index]);
    state.shown.textContent = data.labels[state.index];
  }
  root.dataset.shown = data.labels[state.index];
  root.dataset.index = String(state.index);
}

// Blocks that follow the control elsewhere on the page (instant.py's instant_blocks): the control shows them its stop.
function followers(state) {
  return document.querySelectorAll(`[class*="st-key-${state.data.figures}"] .rnnviz-instant-follower`);
}

function draw(state) {
  drawControl(state);
  drawView(state);
  syncFrames(state);
  for (const node of followers(state)) if (node.__rnnvizShow) node.__rnnvizShow(state.index);
}

// A follower shows the stop its control shows in the browser (which may be ahead of the server's), else the server's.
function follow(data, parentElement) {
  let state = parentElement.__rnnvizInstant;
  if (!state || state.kind !== "follower") {
    if (state && state.root) state.root.remove();
    state = { kind: "follower", drawn: [], katexDrawn: Boolean(katex) };
    parentElement.__rnnvizInstant = state;
    state.root = html("div", "rnnviz-instant rnnviz-instant-follower", parentElement);
    state.view = html("div", "rnnviz-instant-view", state.root);
    state.view.setAttribute("aria-live", "polite");
    state.root.__rnnvizShow = (index) => {
      state.index = Math.min(Math.max(index, 0), state.data.views.length - 1);
      state.root.dataset.index = String(state.index);
      state.root.dataset.shown = String(state.index);  // (a view drawn: what tests and the bench wait for)
      drawView(state);
    };
  }
  state.data = data;
  const views = JSON.stringify(data.views);
  if (views !== state.viewsText) { state.viewsText = views; state.drawn = []; }
  const control = document.querySelector(`.st-key-${data.control.of} .rnnviz-instant:not(.rnnviz-instant-follower)`);
  const shown = control ? Number(control.dataset.index) : NaN;
  state.root.__rnnvizShow(Number.isInteger(shown) ? shown : data.index);
  loadKatex(data.katex, () => {
    if (state.katexDrawn) return;
    state.katexDrawn = true;
    state.drawn = [];
    drawView(state);
  });
  return () => { if (!document.body.contains(state.root)) parentElement.__rnnvizInstant = null; };
}

// The server hears of the stop once the control has been still for data.quiet_ms (at once where the page needs
// the server for every move), never while a pointer holds the control down. A report the server has not answered
// (its run sends back the report's number) within RESEND_MS is sent again, a few times: a lost message must not
// leave the session at the old stop while the page and its address show the new.
const RESEND_MS = 3000;
const RESENDS = 3;

function report(state, index) {
  clearTimeout(state.reportTimer);
  clearTimeout(state.resendTimer);
  let resends = 0;
  const send = () => {
    if (state.pressed) { state.reportTimer = setTimeout(send, state.data.quiet_ms); return; }
    state.reportTimer = null;
    state.seq += 1;
    // (the run this report starts is no wait for anyone: app.browser does not mark the page as working for it)
    document.documentElement.dataset.rnnvizReport = String(Date.now());
    state.setStateValue("move", { index, seq: state.seq });
    state.resendTimer = setTimeout(() => {
      if (!state.stopped && state.data.seq < state.seq && resends++ < RESENDS) send();
    }, RESEND_MS);
  };
  state.flush = send;
  if (state.data.browser) state.reportTimer = setTimeout(send, state.data.quiet_ms); else send();
}

function sendNow(state) {
  clearTimeout(state.reportTimer);
  state.pressed = false;
  if (state.flush) state.flush();
}

function moveTo(state, index) {
  index = Math.min(Math.max(index, 0), state.data.labels.length - 1);
  if (state.data.browser) {
    if (index === state.index) return;
    state.index = index;
    writeAddress(state.data, index);
    draw(state);
  } else {
    state.asked = index;  // the server draws it: the page shows the move once the server's run is back
  }
  report(state, index);
}

function step(state, move) {
  const from = state.asked ?? state.index;
  moveTo(state, { first: 0, back: from - 1, step: from + 1, end: state.data.labels.length - 1 }[move]);
}

// A key pressed where no control that reads it has the focus (Streamlit's own shortcuts stay quiet there too).
function readsKeys(target) {
  if (!target || !target.closest) return false;
  return Boolean(target.closest('input, textarea, select, [contenteditable="true"], [role="slider"], '
    + '[role="combobox"], [role="listbox"], [role="radiogroup"], [role="tablist"], [role="menu"], [role="grid"]'));
}

function build(state, parentElement) {
  const root = html("div", "rnnviz-instant", parentElement);
  state.root = root;
  const control = html("div", "rnnviz-instant-control", root);
  if (state.data.control.kind === "stepper") {
    const row = html("div", "rnnviz-instant-row", control);
    state.buttons = {};
    for (const [move, label, sign, primary] of [["first", "First", "⇤", false], ["back", "Back", "←", false],
                                                ["step", "Step", "→", true], ["end", "Play to end", "⇥", false]]) {
      const button = html("button", `rnnviz-instant-button${primary ? " primary" : ""}`, row);
      button.type = "button";
      button.dataset.move = move;
      html("span", "", button).textContent = label;
      html("span", "rnnviz-instant-key", button).textContent = sign;
      button.addEventListener("click", () => step(state, move));
      state.buttons[move] = button;
    }
    state.caption = html("div", "rnnviz-instant-caption-inline", row);
    state.caption.setAttribute("aria-live", "polite");
    state.onKey = (event) => {
      const move = KEYS[event.key];
      if (!move || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || readsKeys(event.target)) return;
      if (!document.body.contains(root) || root.offsetParent === null) return;  // gone, or hidden by ?hide=
      event.preventDefault();
      step(state, move);
    };
    document.addEventListener("keydown", state.onKey);
  } else {
    const slider = html("div", "rnnviz-instant-slider", control);
    const label = html("label", "rnnviz-instant-label", slider);
    const id = `rnnviz-instant-${Math.random().toString(36).slice(2)}`;
    label.htmlFor = id;
    state.label = html("span", "", label);
    rich(state.data.control.label, state.label);
    state.shown = html("span", "rnnviz-instant-shown", label);
    if (state.data.control.help) label.title = state.data.control.help;
    const range = html("input", "rnnviz-instant-range", slider);
    range.type = "range";
    range.id = id;
    range.min = "0";
    range.step = "1";
    range.addEventListener("input", () => moveTo(state, Number(range.value)));
    state.range = range;
  }
  // A pointer held down on the control (a drag) holds the report back until it is let go.
  control.addEventListener("pointerdown", () => { state.pressed = true; });
  state.onUp = () => { state.pressed = false; };
  window.addEventListener("pointerup", state.onUp);
  window.addEventListener("pointercancel", state.onUp);
  state.view = html("div", "rnnviz-instant-view", root);
  state.view.setAttribute("aria-live", "polite");
}

export default function ({ data, parentElement, setStateValue }) {
  if (data.control.kind === "follower") return follow(data, parentElement);
  let state = parentElement.__rnnvizInstant;
  if (!state || state.kind !== data.control.kind) {
    if (state && state.stop) state.stop();
    if (state && state.root) state.root.remove();  // only the view's own: the component's style sits beside it
    state = { data, seq: 0, index: data.index, kind: data.control.kind, pressed: false, drawn: [],
              katexDrawn: Boolean(katex) };
    parentElement.__rnnvizInstant = state;
    build(state, parentElement);
  }
  state.setStateValue = setStateValue;
  state.data = data;
  // The stop the session is at on the server (tests and the bench wait for it to be the one shown)
  state.root.dataset.server = data.labels[Math.min(data.index, data.labels.length - 1)];
  // The server's stop, once it has heard of every move (none waits to be sent, none is on its way).
  if (data.seq >= state.seq && !state.reportTimer) {
    state.seq = data.seq;
    state.index = Math.min(data.index, data.labels.length - 1);
    state.asked = undefined;
  }
  const views = JSON.stringify(data.views);
  if (views !== state.viewsText) { state.viewsText = views; state.drawn = []; }
  loadKatex(data.katex, () => {
    if (state.katexDrawn) return;
    state.katexDrawn = true;
    state.drawn = [];
    if (state.label) { state.label.replaceChildren(); rich(state.data.control.label, state.label); }
    drawControl(state);
    drawView(state);
    drawAhead(state);
  });
  draw(state);
  if (katex) drawAhead(state);
  state.stop = () => {
    if (state.reportTimer) sendNow(state);  // a move not yet told to the server is told now, not dropped
    state.stopped = true;
    clearTimeout(state.reportTimer);
    clearTimeout(state.resendTimer);
    cancelAnimationFrame(state.framesFrame);
    clearInterval(state.framesTimer);
    if (state.onKey) document.removeEventListener("keydown", state.onKey);
    window.removeEventListener("pointerup", state.onUp);
    window.removeEventListener("pointercancel", state.onUp);
    parentElement.__rnnvizInstant = null;
  };
  // Streamlit calls the last cleanup when the component leaves the page, and may call an earlier one late, while
  // the component stays: only a view no longer on the page is stopped.
  return () => { if (!document.body.contains(state.root)) state.stop(); };
}
