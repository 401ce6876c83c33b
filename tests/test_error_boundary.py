"""An unexpected exception in a page or a fragment is said in words with a reference that leads to its traceback in
the server's log, and never shown as a traceback; st.stop and st.rerun pass through the boundary untouched."""

import logging
import re

from streamlit.testing.v1 import AppTest

from tests.apptest_helpers import open_page

HAND_BUILT = "app_pages/hand_built_rnn.py"
REFERENCE = re.compile(r"the reference ([0-9a-f]{8}) ")


class Injected(RuntimeError):
    """The fault a test puts into the page: nothing in the app raises it."""


def fail(*args, **kwargs):
    raise Injected("disk on fire in /srv/secret/path")


def failure(at) -> tuple[str, str]:
    """(the words, the reference) of the one error element on the page."""
    assert len(at.exception) == 1, [e.value for e in at.exception]
    shown = at.exception[0]
    assert shown.stack_trace == [] and "disk on fire" not in shown.value and "secret" not in shown.value
    return shown.value, REFERENCE.search(shown.value).group(1)


def logged(caplog, reference: str) -> logging.LogRecord:
    """The log record that carries ``reference``, with the injected exception's traceback."""
    records = [r for r in caplog.records if reference in r.getMessage()]
    assert len(records) == 1, [r.getMessage() for r in caplog.records]
    record = records[0]
    assert isinstance(record.exc_info[1], Injected)
    assert "in fail" in logging.Formatter().formatException(record.exc_info)  # the frame that raised it
    return record


def test_a_failing_fragment_is_said_in_words_and_the_log_has_its_traceback(monkeypatch, caplog):
    caplog.set_level(logging.ERROR, logger="rnnviz.ui.app.errors")
    monkeypatch.setattr("rnnviz.ui.hand_built_rnn.hand_run", fail)  # called inside the page's `stepped` fragment
    at = open_page(HAND_BUILT)
    words, reference = failure(at)
    assert words.startswith("This part of the page (stepped) stopped with an unexpected error")
    assert "Your runs, models and files are untouched" in words
    assert logged(caplog, reference).levelno == logging.ERROR
    assert at.title[0].value == "Hand-built RNN"  # drawn before the fragment
    assert any(link.proto.label.startswith("Next: ") for link in at.get("page_link"))  # app.py's, after the page
    # The same failure again in this session keeps its reference; the log holds its traceback once.
    at.run()
    assert failure(at)[1] == reference
    assert sum(reference in r.getMessage() for r in caplog.records if r.exc_info) == 1


def test_a_failing_page_is_said_in_words_and_the_rest_of_the_app_is_drawn(monkeypatch, caplog):
    caplog.set_level(logging.ERROR, logger="rnnviz.ui.app.errors")
    monkeypatch.setattr("rnnviz.ui.hand_built_rnn.weight_editor", fail)  # called by the page itself
    at = open_page(HAND_BUILT)
    words, reference = failure(at)
    assert words.startswith("The page “Hand-built RNN” stopped with an unexpected error")
    logged(caplog, reference)
    assert any(w.key == "seed" for w in at.sidebar.number_input)  # app.py's sidebar, drawn around the page


def _control_flow_script():
    import streamlit as st

    from rnnviz.ui.app.errors import error_boundary, fragment

    st.session_state.runs = st.session_state.get("runs", 0) + 1

    @fragment
    def part():
        st.session_state.part_runs = st.session_state.get("part_runs", 0) + 1
        if st.session_state.part_runs == 1:
            st.rerun()  # a full rerun asked from inside a fragment
        st.markdown("part drawn")

    with error_boundary("the page “Control”"):
        part()
        if st.session_state.runs == 2:
            st.rerun()
        st.markdown("before stop")
        st.stop()
        st.markdown("after stop")
    st.markdown("after the boundary")


def test_st_rerun_and_st_stop_pass_through_the_boundary():
    at = AppTest.from_function(_control_flow_script, default_timeout=30).run()
    assert not at.exception
    assert at.session_state.runs == 3  # the fragment's rerun, then the page's, then the drawn run
    assert [m.value for m in at.markdown] == ["part drawn", "before stop"]

