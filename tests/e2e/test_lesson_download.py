""""Download this lesson" in a real browser: the file, opened from disk with the network cut, moves its control as
the page does, and shows at each stop what the page showed there."""

from tests.e2e.harness import open_app_page
from tests.e2e.test_instant import PRESS, READ, read, shows

KEY = "stacked_step"
MATH = "() => document.querySelectorAll('.rnnviz-instant-view math, .rnnviz-lesson-intro math').length"


def test_the_downloaded_lesson_moves_offline_as_the_page_does(page, base_url, browser, tmp_path):
    open_app_page(page, base_url, "stacked-rnns")
    shows(page, KEY, "1", 1)
    with page.expect_download() as download:
        page.get_by_role("button", name="Download this lesson").click()
    first = read(page, KEY)
    page.evaluate(PRESS, [KEY, ["ArrowRight"]])
    shows(page, KEY, "2", 1)
    second = read(page, KEY)
    assert download.value.suggested_filename == "rnnviz-stacked-rnns.html"
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)

    offline = browser.new_context(offline=True, viewport={"width": 1400, "height": 900})
    asked = []

    def only_files(route):
        asked.append(route.request.url)
        if route.request.url.startswith(("file:", "blob:")):
            route.continue_()
        else:
            route.abort()

    offline.route("**/*", only_files)
    try:
        lesson = offline.new_page()
        lesson.goto(saved.as_uri())
        shows(lesson, KEY, "1", 1)
        lesson.wait_for_function(f"() => ({MATH})() > 0")  # KaTeX, inlined, drew the equations as MathML
        assert lesson.evaluate(READ, KEY) == first
        lesson.keyboard.press("ArrowRight")
        shows(lesson, KEY, "2", 1)  # the grid's frame too (data-instant-shown)
        moved = lesson.evaluate(READ, KEY)
        assert moved == second and moved["charts"][0]["shown"] == "2"
        assert "$" not in moved["words"] and moved["equations"]  # no equation left as its source
        assert [url for url in asked if not url.startswith(("file:", "blob:"))] == []
    finally:
        offline.close()
