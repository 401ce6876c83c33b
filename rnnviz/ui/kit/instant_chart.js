// A line chart on a log y axis that follows a slider in the browser (rnnviz.ui.kit.instant_chart): the server sends
// the engine's curves for every stop of the slider once, and a move of the slider's thumb redraws the chart from
// them in the same frame, with no round trip and no new plotly chart. Nothing here computes a figure: every curve,
// label and number is the server's, picked by the stop nearest to the thumb's value.
const SVG_NS = "http://www.w3.org/2000/svg";
const MARGIN = { left: 78, right: 18, top: 14, bottom: 58 };
const SUPERSCRIPTS = { "-": "⁻", 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹" };

const el = (name, attrs = {}, parent = null) => {
  const node = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (parent) parent.appendChild(node);
  return node;
};

const html = (tag, className, parent) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (parent) parent.appendChild(node);
  return node;
};

const power = (exponent) => "10" + String(exponent).split("").map((c) => SUPERSCRIPTS[c]).join("");

// Ticks at 1, 2 or 5 times a power of ten, about `count` of them over [low, high].
const niceTicks = (low, high, count) => {
  const raw = (high - low) / Math.max(count, 1);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) || raw;
  const ticks = [];
  for (let t = Math.ceil(low / step) * step; t <= high + 1e-9; t += step) ticks.push(Math.round(t * 1e6) / 1e6);
  return ticks;
};

// Whether the segment (x1, y1)–(x2, y2) passes through the box (Liang–Barsky clipping).
const crosses = (box, x1, y1, x2, y2) => {
  let t0 = 0, t1 = 1;
  const dx = x2 - x1, dy = y2 - y1;
  for (const [p, q] of [[-dx, x1 - box.left], [dx, box.right - x1], [-dy, y1 - box.top], [dy, box.bottom - y1]]) {
    if (p === 0) { if (q < 0) return false; continue; }
    const t = q / p;
    if (p < 0) { if (t > t1) return false; if (t > t0) t0 = t; } else { if (t < t0) return false; if (t < t1) t1 = t; }
  }
  return true;
};

// How many of the polylines' segments (and other labels' boxes) a label's box, grown by a few pixels, meets.
const collisions = (box, lines, taken) => {
  const grown = { left: box.left - 3, right: box.right + 3, top: box.top - 3, bottom: box.bottom + 3 };
  let count = taken.filter((t) => t.left < grown.right && grown.left < t.right && t.top < grown.bottom
    && grown.top < t.bottom).length;
  for (const line of lines) {
    for (let i = 1; i < line.length; i++) {
      if (crosses(grown, line[i - 1][0], line[i - 1][1], line[i][0], line[i][1])) count++;
    }
  }
  return count;
};

// Put a drawn text at the first of the places (its anchor points, in order of preference) where it meets no curve
// and no other label, inside the plot; where every place meets one, at the place that meets the fewest.
const place = (text, places, lines, taken, plot) => {
  let best = null;
  for (const [x, y, anchor] of places) {
    text.setAttribute("x", x);
    text.setAttribute("y", y);
    text.setAttribute("text-anchor", anchor);
    const b = text.getBBox();
    const box = { left: b.x, right: b.x + b.width, top: b.y, bottom: b.y + b.height };
    const outside = box.left < plot.left || box.right > plot.right || box.top < plot.top || box.bottom > plot.bottom;
    const score = collisions(box, lines, taken) + (outside ? 1000 : 0);
    if (best === null || score < best.score) best = { x, y, anchor, box, score };
    if (score === 0) break;
  }
  text.setAttribute("x", best.x);
  text.setAttribute("y", best.y);
  text.setAttribute("text-anchor", best.anchor);
  taken.push(best.box);
  return best;
};

const nearestStop = (stops, value) => {
  let best = 0;
  for (let i = 1; i < stops.length; i++) if (Math.abs(stops[i] - value) < Math.abs(stops[best] - value)) best = i;
  return best;
};

function draw(state) {
  const { data, root } = state;
  const index = nearestStop(data.stops, state.value);
  const shown = data.chosen[index];
  state.width = root.clientWidth;
  const width = Math.max(state.width, 240);
  const scale = data.font_scale;
  const font = 16 * scale;
  const series = [...data.fixed.filter((s) => s.stop !== data.stops[index]), ...shown.series];
  const all = series.flatMap((s) => s.log_y).concat(data.hline ? [data.hline.log_y] : [])
    .filter((v) => v !== null);
  state.legend.replaceChildren(...series.filter((s) => s.legend).map((s) => {
    const item = html("span", "item");
    const swatch = el("svg", { width: 30, height: 10, "aria-hidden": "true" }, item);
    el("line", { x1: 0, x2: 30, y1: 5, y2: 5, stroke: s.colour || "currentColor", "stroke-width": Math.min(s.width, 4),
                 "stroke-dasharray": s.dash ? "7,5" : "none" }, swatch);
    html("span", "", item).textContent = s.legend;
    return item;
  }));
  // The chart and its legend share data.height, as a plotly figure's plot and the legend below it do.
  const height = Math.max(data.height - state.legend.offsetHeight, 200);
  let low = Math.min(...all), high = Math.max(...all);
  if (high - low < 1) { const mid = (high + low) / 2; low = mid - 0.5; high = mid + 0.5; }
  const pad = (high - low) * 0.06;
  low -= pad; high += pad;
  const xs = data.x, left = MARGIN.left * scale, bottom = MARGIN.bottom * scale;
  const plotW = width - left - MARGIN.right, plotH = height - MARGIN.top - bottom;
  const px = (x) => left + ((x - xs[0]) / (xs[xs.length - 1] - xs[0])) * plotW;
  const py = (logY) => MARGIN.top + (1 - (logY - low) / (high - low)) * plotH;

  const svg = state.svg;
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("font-size", font);
  svg.setAttribute("aria-label", shown.alt);
  el("title", {}, svg).textContent = shown.alt;

  const grid = el("g", { stroke: "currentColor", "stroke-opacity": 0.12 }, svg);
  const labels = el("g", { fill: "currentColor", "font-size": font * 0.85 }, svg);
  const decades = Math.floor(high) - Math.ceil(low);
  const every = [1, 2, 5, 10, 20, 50].find((n) => decades / n <= 7) || 100;
  for (let e = Math.ceil(low); e <= Math.floor(high); e++) {
    if (e % every !== 0) continue;
    el("line", { x1: left, x2: left + plotW, y1: py(e), y2: py(e) }, grid);
    el("text", { x: left - 8, y: py(e), "text-anchor": "end", "dominant-baseline": "middle" }, labels)
      .textContent = power(e);
  }
  for (const t of niceTicks(xs[0], xs[xs.length - 1], 6)) {
    el("line", { x1: px(t), x2: px(t), y1: MARGIN.top, y2: MARGIN.top + plotH }, grid);
    el("text", { x: px(t), y: MARGIN.top + plotH + font * 1.2, "text-anchor": "middle" }, labels).textContent = t;
  }
  el("text", { x: left + plotW / 2, y: height - font * 0.5, "text-anchor": "middle" }, labels)
    .textContent = data.x_title;
  el("text", { transform: `translate(${font}, ${MARGIN.top + plotH / 2}) rotate(-90)`, "text-anchor": "middle" },
    labels).textContent = data.y_title;

  const hlineY = data.hline ? py(data.hline.log_y) : null;
  if (data.hline) {
    el("line", { x1: left, x2: left + plotW, y1: hlineY, y2: hlineY, stroke: data.hline.colour, "stroke-width": 1 },
       svg);
  }

  // Every curve as pixel polylines (broken where a value is missing): the labels are placed where none runs.
  const polylines = [];
  const lines = el("g", { fill: "none", "stroke-linejoin": "round" }, svg);
  for (const s of series) {
    let d = "", open = false;
    const sx = s.x || xs;  // a series may be measured at lags of its own
    s.log_y.forEach((logY, i) => {
      if (logY === null) { open = false; return; }
      const point = [px(sx[i]), py(logY)];
      if (!open) polylines.push([]);
      polylines[polylines.length - 1].push(point);
      d += `${open ? "L" : "M"}${point[0].toFixed(1)},${point[1].toFixed(1)}`;
      open = true;
    });
    el("path", { d, stroke: s.colour || "currentColor", "stroke-width": s.width,
                 "stroke-dasharray": s.dash ? "7,5" : "none" }, lines);
  }
  const plot = { left, right: left + plotW, top: MARGIN.top, bottom: MARGIN.top + plotH };
  const taken = [];

  if (data.hline) {
    const y = hlineY;
    polylines.push([[left, y], [left + plotW, y]]);
    const label = el("text", { fill: "currentColor", "font-size": font * 0.85 }, svg);
    label.textContent = data.hline.label;
    // Under or over the line at either end, or a little way in: wherever the curves that start at it are not.
    const below = y + font, over = y - font * 0.4, right = left + plotW - 4;
    place(label, [[left + 4, below, "start"], [left + 4, over, "start"], [right, below, "end"], [right, over, "end"],
                  [left + plotW * 0.25, below, "start"], [left + plotW * 0.25, over, "start"]], polylines, taken, plot);
  }

  const note = shown.note;  // optional: a label at one point of the shown curve, with a line to it
  if (note && note.log_y !== null) {
    const x = px(note.x), y = py(note.log_y);
    const text = el("text", { fill: note.colour }, svg);
    el("tspan", { "font-weight": "bold" }, text).textContent = note.bold;
    el("tspan", {}, text).textContent = note.rest;
    // Above the point first for a value of 1 or more, below it first for less; further out where the curves run.
    const sides = note.log_y >= 0 ? [-1, 1] : [1, -1];
    const places = [];
    for (const reach of [35, 70, 110]) {
      for (const side of sides) {
        const ty = y + side * reach;
        for (const dx of [90, 160, 40]) places.push([x - dx, side < 0 ? ty - 4 : ty + font, "middle"]);
      }
    }
    const spot = place(text, places, polylines, taken, plot);
    const ty = spot.box.top > y ? spot.box.top : spot.box.bottom;  // the leader meets the text's near edge
    el("line", { x1: spot.x, y1: ty, x2: x, y2: y, stroke: note.colour, "stroke-width": 1.5 }, svg);
  }

  state.numbers.replaceChildren(...shown.numbers.map(([label, value]) => {
    const box = html("div", "number");
    html("div", "label", box).textContent = label;
    html("div", "value", box).textContent = value;
    return box;
  }));
  root.dataset.shown = data.stops[index];
}

// A standalone copy of the drawn chart for a slide: currentColor resolved to the theme's text colour.
function svgText(state) {
  const copy = state.svg.cloneNode(true);
  copy.setAttribute("xmlns", SVG_NS);
  copy.setAttribute("font-family", getComputedStyle(state.root).fontFamily);
  copy.setAttribute("color", getComputedStyle(state.root).color);
  return new XMLSerializer().serializeToString(copy);
}

function download(name, href) {
  const link = document.createElement("a");
  link.href = href;
  link.download = name;
  link.click();
}

function saveSvg(state) {
  download("rnnviz-figure.svg", URL.createObjectURL(new Blob([svgText(state)], { type: "image/svg+xml" })));
}

function savePng(state) {
  const image = new Image();
  const width = Number(state.svg.getAttribute("width")), height = Number(state.svg.getAttribute("height"));
  image.onload = () => {
    const canvas = document.createElement("canvas");
    canvas.width = width * 2;
    canvas.height = height * 2;
    const context = canvas.getContext("2d");
    // The page's own background (light or dark theme): the body's is transparent under Streamlit's app.
    const app = document.querySelector('[data-testid="stApp"]');
    context.fillStyle = app ? getComputedStyle(app).backgroundColor : "white";
    context.fillRect(0, 0, canvas.width, canvas.height);
    context.scale(2, 2);
    context.drawImage(image, 0, 0);
    download("rnnviz-figure.png", canvas.toDataURL("image/png"));
  };
  image.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svgText(state));
}

// The value the followed slider shows now (Streamlit's slider is a react-aria one around a hidden range input), or
// null where it is not on the page.
function sliderValue(selector) {
  const input = document.querySelector(`${selector} input[type="range"]`);
  const value = input ? parseFloat(input.value) : NaN;
  return Number.isFinite(value) ? value : null;
}

export default function ({ data, parentElement }) {
  let state = parentElement.__instantChart;
  if (!state) {
    const root = html("div", "instant-chart", parentElement);
    const tools = html("div", "tools", root);
    for (const [label, save] of [["PNG", savePng], ["SVG", saveSvg]]) {
      const button = html("button", "", tools);
      button.type = "button";
      button.textContent = label;
      button.title = `Download plot as ${label === "SVG" ? "an SVG" : "a PNG"}`;  // plotly's words, and the app's
      button.setAttribute("aria-label", button.title);
      button.addEventListener("click", () => save(parentElement.__instantChart));
    }
    const svg = el("svg", { role: "img" }, root);
    state = { root, svg, legend: html("div", "legend", root), numbers: html("div", "numbers", root) };
    parentElement.__instantChart = state;
  }
  state.data = data;
  state.value = sliderValue(data.follow) ?? data.value;
  draw(state);

  // The thumb's value changes as it is dragged or moved by a key, before the server hears of it: redraw then.
  // (Streamlit calls this function again with each new data, not only on mount: one set of watchers at a time.)
  if (state.stop) state.stop();
  const watcher = new MutationObserver((mutations) => {
    if (!mutations.some((m) => m.target.closest && m.target.closest(data.follow))) return;
    const value = sliderValue(data.follow);
    if (value !== null && value !== state.value) { state.value = value; draw(state); }
  });
  // React writes the moved value into the input's value and aria-valuetext attributes in the same commit.
  watcher.observe(document.body, { subtree: true, attributes: true, attributeFilter: ["value", "aria-valuetext"] });
  // Redrawn at a new width only: the chart's own height never changes what it draws.
  const resized = new ResizeObserver(() => { if (state.root.clientWidth !== state.width) draw(state); });
  resized.observe(state.root);
  state.stop = () => { watcher.disconnect(); resized.disconnect(); };
  return state.stop;
}
