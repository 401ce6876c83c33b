"""Issue 15, a teacher's walkthrough: the explorer's colours mean the same thing everywhere (white is 0, red is
positive, gates run white to green over 0…1), its own-text mode picks a feature that varies there and a prime
taken from it, Gradient decay shows one section at a time with the section in the address, and chart labels
are neither cut nor overlapping."""

import json
import re

import numpy as np
import pytest

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.corpus import load_builtin
from rnnviz.interpret.colortext import CENTRE, colored_text_html, legend_html, scale_for
from rnnviz.interpret.finder import CellId, trace_cells
from rnnviz.interpret.textfeatures import FEATURES, feature_tracks
from rnnviz.ui.kit.models import PRETRAINED_DIR, held_out_text
from tests.apptest_helpers import (
    column_formats,
    instant_control,
    instant_numbers,
    move_instant,
    open_page,
    page_text,
    shown_numbers,
)

EXPLORER = "app_pages/hidden_cell_explorer.py"
GRADIENTS = "app_pages/gradient_decay.py"
# Own text with nothing indented and no quotes (so indentation and strings never change in it), short of the
# 2,000 characters the explorer needs to rank cells.
OWN_TEXT = (
    "Recurrent networks read text one character at a time.\n"
    "Each step mixes the new character into a hidden state.\n"
    "Some units learn to count, some to remember a bracket (like this one), and most do a bit of everything.\n"
    "A cell that tracks a feature is one whose value rises and falls with it, line after line.\n"
) * 3


@pytest.fixture(scope="module")
def python_trace():
    """The shipped Python model traced over its held-out text, as the explorer opens."""
    checkpoint = load_checkpoint(PRETRAINED_DIR / "lstm-python-stdlib.pt")
    text = held_out_text(load_builtin("python-stdlib"), 10_000)
    return text, trace_cells(checkpoint.model, checkpoint.vocab.encode(text))


def backgrounds(html: str) -> list[tuple[int, int, int]]:
    """The background colour of every character span, in order."""
    return [tuple(int(c) for c in m) for m in re.findall(r"background:rgb\((\d+), (\d+), (\d+)\);color", html)]


# --- 1. colours -------------------------------------------------------------------------------------------------


def test_the_cell_state_is_coloured_on_a_scale_centred_on_zero_so_red_means_positive(python_trace):
    text, trace = python_trace
    values = trace.cell(CellId(0, 167, "c"))  # the indentation cell: from −3.45 to +0.473, mostly below 0
    assert values.min() < -3 and 0 < values.max() < 1
    scale = scale_for("c", values)
    assert scale.centre == 0.0 and not scale.sequential
    assert scale.high == pytest.approx(np.abs(values).max()) and scale.low == -scale.high
    assert scale.colour(0.0) == CENTRE  # white is exactly 0, not the middle of the range (−1.49)
    window = slice(0, 2000)
    colours = backgrounds(colored_text_html(text[window], values[window], scale))
    assert len(colours) == 2000
    for value, (r, _, b) in zip(values[window], colours):
        if value > 0.02:
            assert r > b, f"{value:+.3f} is positive but not red"
        elif value < -0.02:
            assert b > r, f"{value:+.3f} is negative but not blue"
    # Equal sizes sit equally far along either arm of the scale.
    assert scale.position(0.4) == pytest.approx(-scale.position(-0.4)) == pytest.approx(0.4 / scale.high)
    legend = legend_html(scale, "c_t", observed=(float(values.min()), float(values.max())))
    assert "<span>−3.45</span><span>0</span><span>3.45</span>" in legend
    assert "from −3.45 to 0.473" in legend


def test_h_and_the_candidate_are_centred_on_zero_and_the_gates_run_white_to_green_over_0_to_1(python_trace):
    _, trace = python_trace
    for quantity in ("h", "g"):
        scale = scale_for(quantity, trace.block(0, quantity))
        assert (scale.low, scale.centre, scale.high) == (-1.0, 0.0, 1.0) and not scale.sequential
    for quantity in ("i", "f", "o"):
        values = trace.block(0, quantity)
        assert values.min() >= 0 and values.max() <= 1.0001
        scale = scale_for(quantity, values)
        assert scale.sequential and (scale.low, scale.high) == (0.0, 1.0)
        shades = [scale.colour(v) for v in np.linspace(0, 1, 21)]
        brightness = [sum(c) for c in shades]
        assert brightness == sorted(brightness, reverse=True), "darker as the gate opens"
        assert all(g >= r and g >= b for r, g, b in shades), "one hue (green), never red or blue"
        assert sum(shades[0]) > 3 * 240, "a closed gate is (nearly) white"
    legend = legend_html(scale_for("f", trace.block(0, "f")), "f_t")
    assert "<span>0</span><span>0.5</span><span>1</span>" in legend and "0 (closed)" in legend


def test_the_heatmap_uses_the_same_scales(python_trace):
    from rnnviz.figures.explorer import heatmap_figure

    text, trace = python_trace
    units = list(range(24))
    block = trace.block(0, "c")[:400]
    heat = heatmap_figure(block, units, text[:400], 0, scale_for("c", block[:, units].ravel(), 99.0), "c", "x")
    data = heat.data[0]
    assert data.zmin == -data.zmax
    white = [stop for stop in data.colorscale if stop[1] == f"rgb{CENTRE}"]
    assert len(white) == 1 and white[0][0] == pytest.approx(0.5)  # white sits at value 0
    gates = heatmap_figure(trace.block(0, "f")[:400], units, text[:400], 0, scale_for("f", []), "f", "x").data[0]
    assert (gates.zmin, gates.zmax) == (0.0, 1.0) and f"rgb{CENTRE}" not in [s[1] for s in gates.colorscale]


def test_the_explorers_window_is_sent_once_for_the_whole_text_and_each_start_shows_its_2000_characters(python_trace):
    """The window slides in the browser: the page sends every character's colours and tooltip once, each start of
    the slider names its characters, and a move (as the browser reports it) puts the start in the address."""
    text, trace = python_trace
    at = open_page(EXPLORER)
    assert not at.exception, [e.value for e in at.exception]
    cell = CellId(at.session_state["explorer_layer"], at.session_state["explorer_unit"],
                  at.session_state["explorer_quantity"])
    values = trace.cell(cell)
    scale = scale_for(cell.quantity, values)
    data = instant_control(at, "explorer_window")
    assert data["texts"] == [str(k * 50) for k in range(len(text) // 50 - 40 + 1)]  # 0, 50, …, 8,000
    assert len(json.dumps(data)) < 2_000_000
    k = 20
    (block,) = data["views"][k]
    assert (block["start"], block["end"]) == (k * 50, k * 50 + 2000)
    assert "characters 1,000–2,999" in block["label"]
    coloured = data["shared"][block["coloured"]]
    assert len(coloured["glyphs"]) == len(text)  # the whole text, once
    window = range(block["start"], block["end"])
    drawn = {" ": "·", "\n": "↵", "\t": "→"}
    assert "".join(coloured["glyphs"][t] for t in window) == "".join(drawn.get(ch, ch) for ch in text[1000:3000])
    assert [t for t in coloured["breaks"] if t in window] == [t for t in window if text[t] == "\n"]
    palette = coloured["palette"]
    for t in window:
        r, g, b = scale.colour(float(values[t]))
        assert palette[coloured["background"][t]] == f"#{r:02x}{g:02x}{b:02x}", t
        assert coloured["tips"][t].startswith(f"position {t}: ") and f"{cell.quantity} = {values[t]:+.4f}" in \
            coloured["tips"][t]
    assert coloured["legend"]["numbers"][2] == f"{scale.high:.3g}"
    move_instant(at, "explorer_window", 1000)
    assert not at.exception, [e.value for e in at.exception]
    assert instant_control(at, "explorer_window")["index"] == k
    assert at.query_params["window"] in (["1000"], "1000")
    table = next(frame.value for frame in at.dataframe if "position" in frame.value.columns)
    assert list(table["position"]) == list(window)  # the server's table follows the browser's window


# --- 2. the explorer on your own text -----------------------------------------------------------------------


def test_own_text_gets_a_feature_that_varies_in_it_cells_to_measure_and_a_prime_from_it():
    at = open_page(EXPLORER)
    assert not at.exception, [e.value for e in at.exception]
    # The finder's table shows the threshold accuracy and the guessing rate as two columns of numbers (fractions,
    # drawn as percentages), so that they sort as numbers and their CSV holds them.
    frame = next(frame for frame in at.dataframe if "feature" in frame.value.columns)
    table = frame.value
    assert {"threshold accuracy", "guessing"} <= set(table.columns)
    accuracies = table["threshold accuracy"].dropna()
    assert len(accuracies) and accuracies.between(0, 1).all() and accuracies.dtype.kind == "f"
    assert column_formats(frame)["threshold accuracy"] == "percent"
    at.selectbox(key="explorer_feature").set_value("indent").run()
    old_prime = at.text_area(key="explorer_prime").value
    at.radio(key="explorer_text_mode").set_value("own").run()
    at.text_area(key="explorer_own_text").set_value(OWN_TEXT).run()
    assert not at.exception, [e.value for e in at.exception]

    tracks = feature_tracks(OWN_TEXT, "code")
    assert np.ptp(tracks["indent"]) == 0  # the corpus's feature never changes here
    feature = at.session_state["explorer_feature"]
    assert np.ptp(tracks[feature]) > 0, f"{feature} is constant in the new text"
    assert f"{FEATURES['indent'].label.capitalize()} never changes in this text" in page_text(at)
    assert not any("no cell can track it" in w.value for w in at.warning)
    measure = at.button(key="explorer_importance_button")
    count = int(re.fullmatch(r"Measure the top (\d+) cells", measure.label).group(1))
    assert count > 0 and not measure.disabled
    prime = at.text_area(key="explorer_prime").value
    assert prime and prime in OWN_TEXT and prime != old_prime
    # Too short to rank cells: the page says so, and at which length that changes.
    assert len(OWN_TEXT) < 2000
    note = next(w.value for w in at.warning if "Too few characters to rank cells" in w.value)
    assert f"{len(OWN_TEXT):,} characters" in note and "below 2,000" in note
    assert "ranking cells needs at least 2,000" in page_text(at)

    at.text_area(key="explorer_own_text").set_value(OWN_TEXT * 4).run()  # 2,000 characters and more
    assert not at.exception
    assert not any("Too few characters" in w.value for w in at.warning)
    assert at.text_area(key="explorer_prime").value in OWN_TEXT * 4


def test_a_prime_you_typed_stays_when_the_text_changes():
    at = open_page(EXPLORER)
    at.text_area(key="explorer_prime").set_value("def typed_by_me(x):\n").run()
    at.radio(key="explorer_text_mode").set_value("own").run()
    at.text_area(key="explorer_own_text").set_value("x = (1, [2, 3])\nif x:\n    print(x)\n" * 4).run()
    assert not at.exception
    assert at.text_area(key="explorer_prime").value == "def typed_by_me(x):\n"


# --- 3. Gradient decay, one section at a time ---------------------------------------------------------------

SECTION_TITLES = {
    "powers": "**1. Repeated multiplication by W_hh.**",
    "tanh": "**2. Through the tanh nonlinearity.**",
    "sum": "**3. A long-range signal buried under short-range ones.**",
    "clipping": "**4. Gradient clipping.**",
    "lstm": "**5. The LSTM's cell path.**",
}


def shown_sections(at) -> list[str]:
    text = page_text(at)
    return [key for key, title in SECTION_TITLES.items() if title in text]


def test_a_link_with_a_section_opens_that_section_only_and_the_picker_writes_it_back():
    at = open_page(GRADIENTS, query={"section": "clipping"})
    assert not at.exception, [e.value for e in at.exception]
    assert shown_sections(at) == ["clipping"]
    assert at.segmented_control(key="gradient_decay_section").value == "clipping"
    assert list(shown_numbers(at)) == ["steps clipped", "cos(raw g, clipped g)"]  # under the θ slider
    assert len(at.get("plotly_chart")) == 1
    assert at.query_params["section"] in ("clipping", ["clipping"])

    at.segmented_control(key="gradient_decay_section").set_value("lstm").run()
    assert shown_sections(at) == ["lstm"]
    assert at.query_params["section"] in ("lstm", ["lstm"])


def test_settings_survive_a_visit_to_another_section_and_a_bad_section_is_noticed():
    at = open_page(GRADIENTS)
    assert shown_sections(at) == ["powers"]  # no section in the address: the first
    at.slider(key="gradient_decay_sigma").set_value(0.95).run()
    at.segmented_control(key="gradient_decay_section").set_value("clipping").run()
    at.segmented_control(key="gradient_decay_section").set_value("powers").run()
    assert not at.exception
    assert at.slider(key="gradient_decay_sigma").value == 0.95
    assert instant_numbers(at, "gradient_decay_power")["measured ‖W_hhᴷ v‖ after K = 150"] == "4.56·10⁻⁴"

    bad = open_page(GRADIENTS, query={"section": "everything"})
    assert not bad.exception
    assert any("section=everything" in w.value for w in bad.warning)
    assert shown_sections(bad) == ["powers"]


# --- 4. labels --------------------------------------------------------------------------------------------------


def test_the_blow_up_label_sits_below_its_marker_on_the_side_with_room():
    from rnnviz.figures.gradients import clipping_figure
    from rnnviz.lessons import gradients

    for lr in (1.0, 0.5):  # blows up at step 17 and at step 42 of 60
        config = gradients.ClipConfig(lr=lr)
        unclipped, clipped = gradients.train_for_clipping(config), gradients.train_for_clipping(config, 1.0)
        mark = next(t for t in clipping_figure(unclipped, clipped, 1.0, config.steps).data if t.mode == "markers+text")
        assert mark.text == (f"inf/NaN at step {unclipped.blew_up_at}",)
        side = "right" if unclipped.blew_up_at <= config.steps / 2 else "left"
        assert mark.textposition == f"bottom {side}" and mark.cliponaxis is False


def test_unrolling_bar_labels_are_all_one_size():
    from rnnviz.figures.unroll import BAR_LABEL_SIZE, step_contributions_figure
    from rnnviz.lessons.unroll import UnrollConfig, unroll

    for steps in (6, 12):
        result = unroll(UnrollConfig(steps=steps, gain=3.0))
        fig = step_contributions_figure(result)
        bars = fig.data[0]
        assert list(bars.text) == [f"{v:.3g}" for v in result.step_grad_norms]
        assert bars.textfont.size == BAR_LABEL_SIZE and bars.constraintext == "none"
        assert fig.layout.uniformtext.minsize == BAR_LABEL_SIZE and fig.layout.uniformtext.mode == "show"
        assert fig.layout.yaxis.range[1] > max(result.step_grad_norms) * 1.15  # room above the tallest bar


def test_truncated_bptt_value_labels_stand_on_white_and_neighbours_take_turns():
    from rnnviz.figures.tbptt import sweep_figure
    from rnnviz.lessons.tbptt import SweepConfig, sweep

    config = SweepConfig(delay=2, length=16, chunks=(1, 2, 3, 4, 16), steps=100)
    runs = sweep(config)
    fig = json.loads(sweep_figure(runs, config.delay, config.task.chance).to_json())
    labels = [a for a in fig["layout"]["annotations"] if re.fullmatch(r"\d\.\d\d", a["text"])]
    assert [a["text"] for a in labels] == [f"{r.accuracy:.2f}" for r in sorted(runs, key=lambda r: r.chunk)]
    assert all(a.get("bgcolor") for a in labels)
    shifts = [a["yshift"] for a in labels][:4]
    assert all(a != b for a, b in zip(shifts, shifts[1:])), "K = 1, 2, 3, 4 sit close: their labels alternate"
    delay_label = next(a for a in fig["layout"]["annotations"] if a["text"] == "D = 2")
    assert delay_label["y"] < config.task.chance  # below every accuracy, clear of the value labels
