"""Home: the five shapes a sequence problem can take, with links to the pages that use each, and the course path
through the pages in the chapter's order."""

from rnnviz.ui.home import page

page()
