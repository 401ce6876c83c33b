// A lesson file (rnnviz.ui.kit.lesson) opened from disk: draws what the page drew, in its order, from the data in
// the file. Each instant view is the kit's own instant.js, given the data the server sent; each figure that follows
// it sits where instant.js looks for it (st-key-<figure key>, stPlotlyChart). Every text goes in as text.
const lesson = JSON.parse(document.getElementById("rnnviz-lesson-data").textContent);
const moduleUrl = (source) => URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
// instant.js loads KaTeX from here, and draws MathML, which needs no fonts.
globalThis.rnnvizLesson = { katex: moduleUrl(lesson.katex), katexOptions: { output: "mathml" } };

const el = (tag, className, parent) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  parent.appendChild(node);
  return node;
};
const CONFIG = { displaylogo: false, responsive: true };

async function plotted(item, parent) {
  const box = el("div", "rnnviz-lesson-item", parent);
  const key = item.kind === "frames" ? el("div", `st-key-${item.key}`, box) : box;
  const chart = el("div", "stPlotlyChart", key);
  chart.dataset.testid = "stPlotlyChart";
  const gd = el("div", "", chart);
  const figure = item.figure;
  const alt = item.alt || (figure.layout && figure.layout.meta && figure.layout.meta.alt) || "";
  if (alt) chart.setAttribute("aria-label", alt);
  await window.Plotly.newPlot(gd, { data: figure.data || [], layout: figure.layout || {},
                                    frames: figure.frames || [], config: CONFIG });
}

function intro(katex, main) {
  const box = el("div", "rnnviz-lesson-intro", main);
  for (const part of lesson.intro.split(/(\$[^$]+\$)/)) {
    if (part.length > 2 && part.startsWith("$") && part.endsWith("$")) {
      katex.render(part.slice(1, -1), el("span", "", box), { throwOnError: false, output: "mathml" });
    } else {
      box.appendChild(document.createTextNode(part.replace(/\*\*/g, "")));
    }
  }
  if (lesson.equation) {
    katex.render(lesson.equation, el("div", "", main), { displayMode: true, throwOnError: false, output: "mathml" });
  }
}

const main = document.getElementById("rnnviz-lesson");
const katex = (await import(globalThis.rnnvizLesson.katex)).default;
intro(katex, main);
const instant = (await import(moduleUrl(lesson.instant))).default;
const drawn = [];
const views = [];
for (const item of lesson.items) {
  if (item.kind !== "view") { drawn.push(plotted(item, main)); continue; }
  // As Streamlit nests it: the setting's container (st-key-<key>), the component (st-key-<key>_instant).
  const setting = el("div", `rnnviz-lesson-item st-key-${item.key}`, main);
  views.push([item, el("div", `st-key-${item.key}_instant`, setting)]);
}
await Promise.allSettled(drawn);
for (const [item, parentElement] of views) instant({ data: item.data, parentElement, setStateValue: () => {} });
document.body.dataset.lessonReady = "1";
