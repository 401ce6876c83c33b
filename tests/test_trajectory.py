"""The state trajectory: PCA projection against numpy's eigendecomposition, its sign convention, nearest states with
the time exclusion, the hover context, and the plotly figure."""

import numpy as np
import pytest

from rnnviz.figures.trajectory import trajectory_figure
from rnnviz.interpret.trajectory import context, nearest, project


def rank2(t=40, h=7, seed=0):
    rng = np.random.default_rng(seed)
    mean = rng.normal(size=h)
    a, b = rng.normal(size=(t, 2)), rng.normal(size=(2, h))
    return mean + a @ b  # (T, H), rank 2 around the mean


def spread(t=60, h=6, seed=1):
    """Full-rank states with well-separated variances, so that the axes are unique up to sign."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(t, h)) * np.array([5.0, 3.0, 2.0, 1.0, 0.5, 0.25])[:h] + 1.5


def test_rank_two_states_are_reconstructed_exactly():
    states = rank2()
    p = project(states)
    np.testing.assert_allclose(p.mean + p.coords @ p.axes, states, atol=1e-10)
    np.testing.assert_allclose(p.axes @ p.axes.T, np.eye(2), atol=1e-12)
    assert p.explained.sum() == pytest.approx(1.0, abs=1e-12)
    assert p.rest == pytest.approx(0.0, abs=1e-12)
    assert p.explained[0] >= p.explained[1] > 0


def test_float32_states_are_accepted():
    p = project(rank2().astype(np.float32))
    assert p.coords.shape == (40, 2) and p.axes.shape == (2, 7)


def test_coords_match_the_covariance_eigendecomposition():
    states = spread()
    p = project(states, components=3)
    covariance = np.cov(states, rowvar=False)
    eigenvalues, vectors = np.linalg.eigh(covariance)  # ascending
    order = np.argsort(eigenvalues)[::-1][:3]
    v = vectors[:, order]  # (H, 3)
    for k in range(3):  # the convention by hand: the largest-|loading| entry positive
        v[:, k] *= np.sign(v[np.argmax(np.abs(v[:, k])), k])
    np.testing.assert_allclose(p.axes, v.T, atol=1e-10)
    np.testing.assert_allclose(p.coords, (states - states.mean(axis=0)) @ v, atol=1e-10)
    np.testing.assert_allclose(p.explained, eigenvalues[order] / eigenvalues.sum(), atol=1e-12)
    assert p.total_variance == pytest.approx(np.trace(covariance))
    assert p.rest == pytest.approx(1 - eigenvalues[order].sum() / eigenvalues.sum())


def test_sign_convention_is_deterministic():
    states = spread()
    first, again = project(states), project(states.copy())
    np.testing.assert_array_equal(first.coords, again.coords)
    biggest = first.axes[np.arange(2), np.argmax(np.abs(first.axes), axis=1)]
    assert (biggest > 0).all()
    # The SVD may return either sign; the convention may not: −X has the same axes and negated coordinates,
    # and reordering the characters reorders the points without flipping anything.
    negated = project(-states)
    np.testing.assert_allclose(negated.axes, first.axes, atol=1e-10)
    np.testing.assert_allclose(negated.coords, -first.coords, atol=1e-10)
    perm = np.random.default_rng(2).permutation(len(states))
    np.testing.assert_allclose(project(states[perm]).coords, first.coords[perm], atol=1e-10)


def test_axis_without_variance_explains_nothing():
    line = np.outer(np.arange(10.0), [1.0, 2.0, 2.0]) + 3.0  # every state on one line: rank 1
    p = project(line)
    assert p.explained[0] == pytest.approx(1.0) and p.explained[1] == 0.0
    assert (p.coords[:, 1] == 0.0).all()
    np.testing.assert_allclose(p.axes[0], [1 / 3, 2 / 3, 2 / 3], atol=1e-12)
    np.testing.assert_allclose(p.axes @ p.axes.T, np.eye(2), atol=1e-12)


def test_tied_loadings_turn_the_first_positive():
    diagonal = np.outer(np.arange(8.0), [1.0, -1.0])  # |loadings| tie: the first unit's is made positive
    for states in (diagonal, diagonal[::-1], -diagonal):
        np.testing.assert_allclose(project(states, components=1).axes[0], [2 ** -0.5, -(2 ** -0.5)], atol=1e-12)


def test_projection_is_read_only():
    p = project(rank2())
    with pytest.raises(ValueError):
        p.coords[0, 0] = 1.0


@pytest.mark.parametrize("states, components, words", [
    (np.zeros((1, 4)), 2, "at least 2 states"),
    (np.ones((5, 3)), 2, "do not vary"),
    (np.random.default_rng(0).normal(size=(5, 1)), 2, "components must be"),
    (np.random.default_rng(0).normal(size=(5, 4)), 0, "components must be"),
    (np.random.default_rng(0).normal(size=(3, 8)), 4, "components must be"),
    (np.array([[0.0, 1.0], [np.nan, 2.0], [1.0, 0.0]]), 2, "finite"),
    (np.zeros(6), 2, r"\(T, H\)"),
])
def test_bad_projection_inputs(states, components, words):
    with pytest.raises(ValueError, match=words):
        project(states, components)


def test_nearest_in_order_with_the_time_exclusion():
    # 1-D states so that the distances can be read off: |s_t − s_5|
    s = np.array([0.0, 9.0, 4.25, 5.25, 5.0625, 5.0, 4.875, 7.0, 5.5, 6.0, 4.0, 6.0])[:, None]  # exact in binary
    assert nearest(s, 5, k=3, exclude_within=0) == [4, 6, 3]
    assert nearest(s, 5, k=4, exclude_within=2) == [8, 2, 9, 10]  # 3, 4, 6 and 7 are within 2 characters
    assert nearest(s, 5, k=5, exclude_within=2)[2:] == [9, 10, 11]  # a three-way tie: the earlier position first
    assert nearest(s, 5, k=50, exclude_within=2) == [8, 2, 9, 10, 11, 1, 0]  # fewer left than k: all, in order


def test_nearest_uses_all_units():
    s = np.array([[0, 0, 0], [5, 5, 5], [1, 0, 3], [0, 2, 0], [3, 3, 3]], dtype=float)
    assert nearest(s, 0, k=2, exclude_within=0) == [3, 2]


@pytest.mark.parametrize("kwargs, words", [
    (dict(index=9), "index must be"), (dict(index=-1), "index must be"),
    (dict(index=0, k=-1), "k must be"), (dict(index=0, exclude_within=-2), "exclude_within"),
])
def test_bad_nearest_inputs(kwargs, words):
    with pytest.raises(ValueError, match=words):
        nearest(np.zeros((9, 2)), **kwargs)


def test_context_shows_whitespace_and_marks_the_character():
    text = "def f(x):\n    return x"
    assert context(text, 4, before=3, after=2) == "…ef·⟦f⟧(x…"
    assert context(text, 9, before=2, after=3) == "…):⟦↵⟧···…"
    assert context("ab", 0) == "⟦a⟧b"
    with pytest.raises(ValueError, match="position"):
        context("ab", 2)


@pytest.fixture
def drawn():
    text = "if a<b>c & d:\n    x = '<b>'\n"
    rng = np.random.default_rng(3)
    states = rng.normal(size=(len(text), 5)) * np.array([4.0, 2.0, 1.0, 0.5, 0.2])
    p = project(states)
    track = np.arange(len(text)) % 7
    near = nearest(states, 20, k=3, exclude_within=2)
    return p, text, track, near, trajectory_figure(p, text, track, "depth <d>", highlight=20, neighbours=near)


def test_figure_points_and_customdata(drawn):
    p, text, track, near, fig = drawn
    path, chars, neighbours, chosen = fig.data
    assert len(chars.x) == len(text) == len(path.x)
    np.testing.assert_array_equal(chars.customdata, np.arange(len(text)))
    np.testing.assert_allclose(chars.x, p.coords[:, 0])
    np.testing.assert_allclose(chars.marker.color, track)
    assert list(neighbours.customdata) == near and list(chosen.customdata) == [20]
    np.testing.assert_allclose(chosen.x, [p.coords[20, 0]])
    assert neighbours.name.startswith("nearest 3") and chosen.name.startswith("position 20")
    assert fig.layout.showlegend and fig.layout.legend.orientation == "h"
    assert path.hoverinfo == "skip"


def test_figure_axis_titles_carry_the_variance_shares(drawn):
    p, *_, fig = drawn
    assert fig.layout.xaxis.title.text == f"PC 1 ({100 * p.explained[0]:.0f}% of variance)"
    share = 100 * p.explained[1]
    assert f"{share:.0f}%" in fig.layout.yaxis.title.text or f"{share:.1f}%" in fig.layout.yaxis.title.text


def test_figure_hover_is_escaped(drawn):
    _, text, _, _, fig = drawn
    hover = fig.data[1].text
    at = text.index("<b>'")  # the "<" of the string's <b>
    assert "&lt;b&gt;" in hover[at] and "<b>'" not in hover[at]
    assert hover[text.index("&")].startswith("position 9: <b>&amp;</b>")
    assert "depth &lt;d&gt; = " in hover[0]
    assert fig.data[1].marker.colorbar.title.text == "depth &lt;d&gt;"


def test_figure_without_highlight_has_no_legend():
    text = "abcdef"
    fig = trajectory_figure(project(spread(t=6, h=3)), text, np.zeros(6), "in string")
    assert len(fig.data) == 2 and not fig.layout.showlegend


@pytest.mark.parametrize("kwargs, words", [
    (dict(text="abc"), "one entry per character"),
    (dict(track=np.zeros(3)), "one entry per character"),
    (dict(highlight=6), "highlight must be"),
    (dict(neighbours=[1, -1]), "a neighbour must be"),
])
def test_bad_figure_inputs(kwargs, words):
    args = dict(projection=project(spread(t=6, h=3)), text="abcdef", track=np.zeros(6), track_label="t")
    with pytest.raises(ValueError, match=words):
        trajectory_figure(**(args | kwargs))


def test_figure_needs_two_components():
    with pytest.raises(ValueError, match="2 components"):
        trajectory_figure(project(spread(t=6, h=3), components=1), "abcdef", np.zeros(6), "t")
