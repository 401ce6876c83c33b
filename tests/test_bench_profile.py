"""The browser bench's summary of a CDP CPU profile (bench.browser_latency.where_the_renderer_works): the shares of
the renderer's busy self time by kind of work, checked against a profile built by hand."""

import pytest

from bench.browser_latency import where_the_renderer_works

SERVER = "http://127.0.0.1:8501"


def node(node_id: int, function: str, url: str = "") -> dict:
    return {"id": node_id, "callFrame": {"functionName": function, "url": url}}


PROFILE = {
    "nodes": [node(1, "(idle)"), node(2, "(program)"), node(3, "(garbage collector)"),
              node(4, "Nl", f"{SERVER}/static/js/react-dom.Dzbslgj4.js"),
              node(5, "a", f"{SERVER}/static/js/PlotlyChart.D9Z0_fxz.js"),
              node(6, "getBoundingClientRect"),
              node(7, "b", f"{SERVER}/static/js/index.DormvYxC.js"),
              node(8, "draw", f"{SERVER}/7591ca49-ea2e-4976-acb4-6cc3a0856d0c"),
              node(9, "c", f"{SERVER}/static/js/useSlot.Ab12Cd34.js")],
    # node → µs of self time: idle 5,000 (left out), then 1,000 busy µs in all
    "samples": [1, 2, 2, 3, 4, 5, 6, 7, 8, 9],
    "timeDeltas": [5_000, 300, 200, 100, 150, 120, 80, 35, 10, 5],
}


def test_busy_time_is_shared_by_kind_of_work_and_idle_is_left_out():
    shares, line = where_the_renderer_works(PROFILE)
    assert shares == pytest.approx({"style, layout, paint": 0.5, "React": 0.15, "plotly": 0.12,
                                    "garbage collection": 0.1, "DOM calls": 0.08, "Streamlit": 0.035,
                                    "the app's components": 0.01, "other script": 0.005})
    assert line == "style, layout, paint 50%, React 15%, plotly 12%"


def test_a_profile_of_one_kind_is_that_kind_whole():
    shares, line = where_the_renderer_works({"nodes": [node(1, "(program)")], "samples": [1, 1],
                                             "timeDeltas": [10, 30]})
    assert shares == {"style, layout, paint": 1.0}
    assert line == "style, layout, paint 100%"
