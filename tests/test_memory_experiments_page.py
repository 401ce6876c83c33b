"""The Memory experiments page in AppTest, with its quick settings: each tab runs and shows measured numbers."""

import re

import pytest

from rnnviz.experiments.delay import DelaySweepConfig, run_copy
from tests.apptest_helpers import open_page, page_text

PAGE = "app_pages/memory_experiments.py"


@pytest.fixture
def page():
    at = open_page(PAGE)
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_delay_sweep_runs_quick_and_shows_its_measurements(page):
    at = page.toggle(key="memory_delay_quick").set_value(True).run()
    assert at.text_input(key="memory_delay_delays").value == "2, 8"
    params = at.dataframe[0].value
    assert list(params["model"]) == ["vanilla RNN", "LSTM"]
    assert (params["total"] == params["embedding"] + params["recurrent"] + params["readout"]).all()
    at.button(key="memory_delay_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    runs = at.dataframe[1].value
    assert len(runs) == 12  # 2 delays × 3 seeds × 2 models
    text = page_text(at)
    for delay in (2, 8):
        shown = runs[runs["D"] == delay].groupby("model")["final held-out accuracy"].mean()
        line = re.search(rf"D = {delay}: vanilla RNN ([0-9.]+), LSTM ([0-9.]+)", text)
        assert line, text
        assert float(line.group(1)) == pytest.approx(shown["vanilla RNN"], abs=0.006)
        assert float(line.group(2)) == pytest.approx(shown["LSTM"], abs=0.006)
    # The run the page prints as a command is the engine's run with those settings, number for number.
    command = at.code[0].value
    assert command.startswith("rnnviz experiments delay --model lstm --delay 8 --length 24")
    config = DelaySweepConfig(alphabet=4, length=24, delays=(8,), steps=40)
    seed = int(re.search(r"--seed (\d+)", command).group(1))
    alone = run_copy(config.run_config("lstm", 8, seed))
    last = runs.iloc[-1]
    assert last["final held-out accuracy"] == round(alone.final_accuracy, 4)
    assert len(at.get("plotly_chart")) == 2


def test_bad_delays_give_a_plain_error(page):
    at = page.text_input(key="memory_delay_delays").set_value("2, 96").run()
    assert not at.exception
    assert any("between 1 and L − 1" in e.value for e in at.error)
    at = at.text_input(key="memory_delay_delays").set_value("two").run()
    assert any("whole numbers" in e.value for e in at.error)


def test_cost_measurement_runs_quick_and_reports_slopes(page):
    at = page.toggle(key="memory_cost_quick").set_value(True).run()
    assert at.select_slider(key="memory_cost_max").value == 512
    assert at.select_slider(key="memory_cost_repeats").value == 1
    at.button(key="memory_cost_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[-1].value
    assert list(table["T"]) == [64, 128, 256, 512]
    assert list(table["attention K, V cache (KiB)"]) == [2 * t * 128 * 4 / 1024 for t in table["T"]]
    assert set(table["LSTM state h_T, c_T (KiB)"]) == {2 * 128 * 4 / 1024}
    assert list(table["LSTM: sequential steps first → last token"]) == list(table["T"])
    metrics = {m.label: m.value for m in at.metric}
    assert {"LSTM time slope", "Attention time slope", "Attention memory slope"} <= set(metrics)
    assert float(metrics["Attention memory slope"]) > 1.5  # the T×T matrix dominates by T = 512
    assert len(at.get("plotly_chart")) == 3


def test_conditioning_runs_quick_and_shows_both_variants(page):
    at = page.toggle(key="memory_cond_quick").set_value(True).run()
    at.button(key="memory_cond_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[-1].value
    assert list(table["variant"]) == ["v at every step"] * 2 + ["v only in h₀"] * 2
    assert list(table["style"]) == ["Python code", "English docs"] * 2
    assert (table["val loss, right v"] > 0).all()
    assert len(at.code) == 4  # samples: 2 styles × 2 variants
    assert len(at.get("plotly_chart")) == 2
