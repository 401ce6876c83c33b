"""Every registered page renders in AppTest with no exception and shows its registered title, as it is and
presented."""

from pathlib import Path

import pytest

from rnnviz.lessons.shapes import SHAPES
from rnnviz.ui.app.presenting import PRESENT_KEY
from rnnviz.ui.app.registry import COURSE, GROUPS, PAGES, course_neighbours, page_by_url
from tests.apptest_helpers import ROOT, open_page
from tests.figure_helpers import figure


@pytest.mark.parametrize("spec", PAGES, ids=[p.url_path for p in PAGES])
def test_page_renders_without_exception(spec):
    at = open_page(spec.path)
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == [spec.title]
    # the page ends with the course path's Previous and Next (none off the path)
    previous, following = course_neighbours(spec)
    footer = {link.proto.label.split(":")[0]: link.proto.page for link in at.get("page_link")
              if link.proto.label.startswith(("Previous:", "Next:"))}
    assert footer == {**({"Previous": previous.address} if previous else {}),
                      **({"Next": following.address} if following else {})}
    # A teacher can present it: the switch at the top draws it again for a room (larger fonts in every figure,
    # which once raised on Home, whose diagrams have no traces).
    at.toggle(key=PRESENT_KEY).set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == [spec.title]


def test_registry_lists_each_page_file_once():
    paths = [p.path for p in PAGES]
    assert len(paths) == len(set(paths))
    assert len({p.url_path for p in PAGES}) == len(PAGES)
    assert sum(p.default for p in PAGES) == 1
    on_disk = {f"app_pages/{f.name}" for f in (ROOT / "app_pages").glob("*.py")}
    assert on_disk == set(paths), "every file in app_pages/ is registered, and every registered file exists"


def test_home_page_draws_the_five_shapes_and_links_their_pages():
    at = open_page("app_pages/home.py")
    assert len(at.get("plotly_chart")) == len(SHAPES)
    # Each shape's diagram: a block per input, hidden and output step, where SHAPES puts them.
    rows = {0.0: "input", 1.0: "hidden", 2.0: "output"}  # the figure's rows, bottom to top
    for panel, shape in enumerate(SHAPES):
        drawn = {}  # role → x positions of its blocks
        for block in figure(at, panel)["layout"]["shapes"]:
            role = rows[round((block["y0"] + block["y1"]) / 2, 6)]
            drawn.setdefault(role, []).append(round((block["x0"] + block["x1"]) / 2, 6))
        expected = {"hidden": list(range(shape.steps)), "input": list(shape.input_steps),
                    "output": list(shape.output_steps)}
        assert {k: sorted(v) for k, v in drawn.items()} == expected, shape.name
    for shape in SHAPES:  # and SHAPES says what each name says
        inputs, outputs = shape.name.split(" ")[0].split("-to-")
        assert (len(shape.input_steps) == 1) == (inputs == "one")
        assert (len(shape.output_steps) == 1) == (outputs == "one")
        if "(aligned)" in shape.name:
            assert shape.input_steps == shape.output_steps
        if "(unaligned)" in shape.name:
            assert max(shape.input_steps) < min(shape.output_steps)
    # Each shape's box: its name, and links that open the pages it names.
    boxes = [b for b in at.main.children.values()  # the course after them; the Presenting switch (no text) before
             if b.type == "flex_container" and b.get("markdown")][:len(SHAPES)]
    assert len(boxes) == len(SHAPES)
    registered = at._registered_pages  # page hash → the script st.navigation runs for it
    for box, shape in zip(boxes, SHAPES):
        assert len(box.get("plotly_chart")) == 1  # its diagram beside its words
        assert box.get("markdown")[0].value.startswith(f"**{shape.name}.** {shape.example}")
        links = [link.proto for link in box.get("page_link")]
        assert [link.page for link in links] == list(shape.page_urls)
        for link, url in zip(links, shape.page_urls):
            target = registered[link.page_script_hash]
            assert target["url_pathname"] == url
            assert Path(target["script_path"]) == ROOT / page_by_url(url).path
            assert link.label == page_by_url(url).title


def test_the_course_path_follows_the_chapter_and_the_navigation_groups_follow_it():
    chapters = [p.chapter for p in COURSE]
    assert chapters == ["8.1", "8.2–8.3", "8.4", "8.5", "8.6", "8.7", "8.8", "8.9", "8.10", "8.11", "8.12", "Beyond",
                        "Beyond", "Beyond"]
    assert [p.url_path for p in COURSE] == [
        "home", "hand-built-rnn", "unrolling-bptt", "truncated-bptt", "char-model-training", "hidden-cell-explorer",
        "image-captioning", "stacked-rnns", "gradient-decay", "lstm-gates", "hidden-state", "memory-experiments",
        "state-capacity", "sequence-to-sequence"]
    assert all(p.summary for p in COURSE)
    # each group is one stretch of the path, in its order; what is off the path comes last
    walked = [p.group for p in PAGES]
    assert list(dict.fromkeys(walked)) == list(GROUPS) and walked == sorted(walked, key=list(GROUPS).index)
    assert all(p.on_course for p in PAGES[:len(COURSE)])


def test_home_lists_the_course_and_every_step_links_its_page():
    at = open_page("app_pages/home.py")
    text = " ".join(m.value for m in at.markdown)
    links = {link.proto.page for link in at.get("page_link")}
    for spec in COURSE[1:]:
        assert spec.chapter in text and spec.summary in text
        assert spec.url_path in links
