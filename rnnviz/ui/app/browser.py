"""The one script the app lets Streamlit run in the browser: constant, built from no user input, and drawn once per
tab (it keeps one set of watchers however often it runs). Two things Streamlit cannot do from Python:

- **An SVG download beside every chart's PNG camera.** Plotly's modebar offers one image format per chart
  (``toImageButtonOptions.format``; the app's camera gives a PNG at twice the drawn size). A slide wants a vector
  too, and plotly.js draws SVG in the browser at no cost to the server (a server-side export would need kaleido
  and a headless Chrome per click). The button asks the same chart for its image with the format switched to SVG
  for that one click, then puts the PNG settings back.
- **A keyboard's focus stays in its row of buttons** when the focused button turns itself off (Enter on Start,
  which is disabled while the run trains): the browser drops the focus to the page, and the next Tab would start
  again from the top. It moves to the next button of the row that is on (Pause).
- **A move that waits for the server says so at once**: the run it starts marks the page as working (a bar along
  the top, the parts the run redraws faded) from its first frame, where Streamlit fades them 0.5 s into a run.
"""

from __future__ import annotations

import streamlit as st

SVG_TITLE = "Download plot as an SVG"

# A page with a curve on it, in plotly's 1000-unit icon box (the modebar fills paths with its own colours).
ICON_PATH = ("M180 40h470l190 190v730H180zM250 110v780h520V270H610V110zM310 740c70-300 310-300 380 0h-80"
             "c-50-190-170-190-220 0z")

# No markup in the script's text: Streamlit's sanitiser drops a script whose text holds any (the icon is built node by
# node).
SCRIPT = """<script>
(() => {
  if (window.rnnvizBrowserScript) return;
  window.rnnvizBrowserScript = true;

  const TITLE = "__TITLE__";
  const SVG_NS = "http://www.w3.org/2000/svg";
  const icon = () => {
    const svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("viewBox", "0 0 1000 1000");
    svg.setAttribute("class", "icon");
    svg.setAttribute("height", "1em");
    svg.setAttribute("width", "1em");
    const path = document.createElementNS(SVG_NS, "path");
    path.setAttribute("fill-rule", "evenodd");
    path.setAttribute("d", "__ICON_PATH__");
    svg.appendChild(path);
    return svg;
  };
  const addSvgButton = (camera) => {
    const group = camera.parentElement;
    const next = group.nextElementSibling;
    if (next && next.dataset.rnnvizSvg) return;
    const button = document.createElement("a");
    button.className = "modebar-btn";
    button.setAttribute("rel", "tooltip");
    button.dataset.title = TITLE;
    button.dataset.gravity = "n";
    button.appendChild(icon());
    button.addEventListener("click", (event) => {
      event.preventDefault();
      event.stopPropagation();
      const chart = button.closest(".js-plotly-plot");
      const options = chart && chart._context && chart._context.toImageButtonOptions;
      if (!options) return;
      const kept = Object.assign({}, options);
      options.format = "svg";
      options.scale = 1;
      try { camera.dispatchEvent(new MouseEvent("click", {bubbles: true})); }
      finally { for (const k of Object.keys(options)) delete options[k]; Object.assign(options, kept); }
    });
    // In a group of its own after the camera's: a second button in that group wrapped below it.
    const own = document.createElement("div");
    own.className = group.className;
    own.dataset.rnnvizSvg = "1";
    own.appendChild(button);
    group.after(own);
  };
  const scan = () => document.querySelectorAll(
    '.js-plotly-plot .modebar-btn[data-title^="Download plot"]').forEach((c) => {
      if (c.dataset.title !== TITLE) addSvgButton(c);
    });

  let focusedButton = null;
  document.addEventListener("focusin", (event) => {
    if (event.target.tagName === "BUTTON") focusedButton = event.target;
  });
  const keepFocusInRow = () => {
    const lost = focusedButton;
    if (!lost || !lost.disabled || document.activeElement !== document.body) return;
    const row = lost.closest('[data-testid="stHorizontalBlock"]');
    if (!row) return;
    const buttons = [...row.querySelectorAll("button")].filter((b) => !b.disabled && b.offsetParent !== null);
    const after = buttons.find((b) => lost.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
    const target = after || buttons[buttons.length - 1];
    if (target) target.focus();
  };

  // A run that a person's move started marks the page as working until it ends (app.style's WORKING_CSS): a key or
  // a pointer in the last second, and not a control of kit.instant, which has answered already (its report's run,
  // and a live page's own runs, show nothing).
  const root = document.documentElement;
  let lastMove = 0;
  const moved = (event) => {
    if (!(event.target.closest && event.target.closest(".rnnviz-instant"))) lastMove = Date.now();
  };
  document.addEventListener("pointerdown", moved, true);
  document.addEventListener("keydown", moved, true);
  let watchedApp = null;
  const watchRuns = () => {
    const app = document.querySelector("[data-testid='stApp']");
    if (!app || app === watchedApp) return;
    watchedApp = app;
    new MutationObserver(() => {
      const state = app.getAttribute("data-test-script-state");
      const report = Number(root.dataset.rnnvizReport || 0);
      if (state === "running" && lastMove + 1000 > Date.now() && !(report + 1000 > Date.now())) {
        root.dataset.rnnvizWorking = "1";
      }
      else if (state === "notRunning") delete root.dataset.rnnvizWorking;
    }).observe(app, {attributes: true, attributeFilter: ["data-test-script-state"]});
  };

  // One pass per frame however many nodes a live page changes in it.
  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; scan(); keepFocusInRow(); watchRuns(); });
  }).observe(document.body, {childList: true, subtree: true, attributes: true, attributeFilter: ["disabled"]});
  scan();
  watchRuns();
})();
</script>""".replace("__TITLE__", SVG_TITLE).replace("__ICON_PATH__", ICON_PATH)


def browser_script() -> None:
    """Start the script in this tab. The only st.html the app lets run JavaScript: the script is the constant
    above, with no user text in it (tests/test_security.py; the other JavaScript is the instant chart's component,
    rnnviz/ui/kit/instant_chart.js)."""
    st.html(SCRIPT, unsafe_allow_javascript=True)
