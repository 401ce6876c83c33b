"""rnnviz's views from Python and Jupyter: load a model, trace a text once, show any view. Never imports streamlit.

    import rnnviz
    model = rnnviz.load("lstm-python-stdlib")      # a shipped model's name, or a path to a checkpoint
    t = rnnviz.trace(model, text)                   # every cell over the text, read once
    t.colour(layer=0, unit=12, quantity="c")        # the text coloured by one cell

Every view returns something that Jupyter displays as it is: a plotly figure, a pandas DataFrame, or ``HTML`` (safe
markup built by rnnviz.interpret; ``str()`` or ``.data`` gives it, ``.save(path)`` writes it as a page). The views
are the engine's and the figure builders' own functions, the ones the app's pages draw with.

Characters outside the model's vocabulary: ``trace`` raises a ValueError that names them (the engine's
UnknownCharactersError), or with ``drop_unknown=True`` leaves them out of the text and lists them in ``Trace.dropped``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from torch import Tensor

from rnnviz.charlm.checkpoint import Checkpoint
from rnnviz.charlm.corpus import Vocab
from rnnviz.charlm.sample import Model as Network
from rnnviz.charlm.sample import generate
from rnnviz.charlm.train import TrainConfig
from rnnviz.core.config import shape_label
from rnnviz.interpret import prediction_strip
from rnnviz.interpret.finder import QUANTITIES, CellId, CellTrace, rank_cells, trace_cells
from rnnviz.interpret.surprisal import Predictions, predictions
from rnnviz.interpret.textfeatures import FEATURES, SYNTAXES, feature_tracks, guess_syntax

STRIP_CHARS = 300  # prediction_strip's default window: the whole of a 3,000-character text is 3 MB of HTML
PATH_NEIGHBOURS = 5  # path(at=…): the states nearest to the chosen one, at least PATH_EXCLUDE characters away
PATH_EXCLUDE = 20
FIND_COLUMNS = ("feature", "rank", "cell", "layer", "unit", "quantity", "r", "accuracy", "threshold", "above",
                "base_rate")


@dataclass(frozen=True)
class HTML:
    """Safe markup that Jupyter displays as it is; ``str(html)`` and ``html.data`` are the markup itself."""

    data: str

    def _repr_html_(self) -> str:
        return self.data

    def __str__(self) -> str:
        return self.data

    def __repr__(self) -> str:
        return f"<rnnviz.HTML: {len(self.data):,} characters of markup; display it in Jupyter, or .save(path)>"

    def save(self, path: str | Path, title: str = "rnnviz") -> Path:
        """Write the markup as a standalone HTML page (for a slide or a browser) and return its path."""
        from html import escape

        path = Path(path)
        path.write_text(f"<!doctype html><meta charset=utf-8><title>{escape(title)}</title>{self.data}\n",
                        encoding="utf-8")
        return path


@dataclass(eq=False, repr=False)
class Model:
    """A character model and what it reads and writes with: the network (CPU, eval mode), its vocabulary, its
    training config, its name and the corpus it was trained on."""

    model: Network  # a CharModel (every recurrent kind, the sLSTM … linear attention included) or a CharTransformer
    vocab: Vocab
    config: TrainConfig
    name: str  # a shipped model's name, or the checkpoint file's stem
    corpus: str  # the corpus name its checkpoint records
    report: tuple[str, ...] = field(default=())  # how rnnviz.charlm.foreign read a plain state_dict

    def __repr__(self) -> str:
        return f"{shape_label(self.config)} over {len(self.vocab)} characters, trained on {self.corpus}"

    @property
    def kind(self) -> str:
        """One of rnnviz.core.config.MODEL_KINDS: "rnn", "lstm", "gru", "mingru", "slstm", "mlstm", "selective",
        "linear_attention" or "transformer"."""
        return self.config.kind

    def sample(self, prime: str = "", length: int = 200, temperature: float = 0.8, seed: int | None = 0) -> str:
        """``length`` characters that the model writes after ``prime`` (rnnviz.charlm.sample.generate)."""
        return generate(self.model, self.vocab, prime, length, temperature=temperature, seed=seed)


def models() -> list[str]:
    """The shipped character models' names, as ``load`` takes them (MODELS.md's table, in its order)."""
    from rnnviz.charlm.pretrained import shipped_models

    return [Path(m.file).stem for m in shipped_models()]


def load(path_or_name: str | Path, vocab: str | Path | None = None, nonlinearity: str = "tanh") -> Model:
    """A shipped model by its name (``models()`` lists them), or a checkpoint file: an rnnviz checkpoint, or a
    plain PyTorch state_dict with its vocabulary (``vocab``, a JSON file; rnnviz.charlm.foreign.load_any). A plain
    nn.RNN's ``nonlinearity`` ("tanh" or "relu") is not in its weights: say it here."""
    from rnnviz.charlm.checkpoint import load_checkpoint
    from rnnviz.charlm.foreign import load_any
    from rnnviz.charlm.pretrained import MODELS_DIR
    from rnnviz.limits import OWN_FILE_LIMITS

    key = str(path_or_name)
    path = Path(path_or_name)
    names = models()
    if key in names and not path.is_file():
        return _model(load_checkpoint(MODELS_DIR / f"{key}.pt"), key)
    if not path.is_file():
        raise ValueError(f"{key!r} is neither a shipped model nor a file. The shipped models: {', '.join(names)}")
    checkpoint, report = load_any(path, vocab, nonlinearity=nonlinearity, limits=OWN_FILE_LIMITS)
    return _model(checkpoint, path.stem, report)


def _model(checkpoint: Checkpoint, name: str, report=()) -> Model:
    checkpoint.model.eval()
    return Model(checkpoint.model, checkpoint.vocab, checkpoint.config, name, checkpoint.corpus, tuple(report))


def _as_model(model: Model | str | Path) -> Model:
    return model if isinstance(model, Model) else load(model)


def trace(model: Model | str | Path, text: str, drop_unknown: bool = False, syntax: str | None = None) -> Trace:
    """Read ``text`` through ``model`` once (h_0 = 0, eval mode): every cell of a recurrent model
    (rnnviz.interpret.finder.trace_cells: an sLSTM's, mLSTM's, selective SSM's or linear attention's h_t of every
    layer) and the model's prediction of every character. ``model`` may also be a
    name or path for ``load``.

    Characters outside the vocabulary raise a ValueError that names them; ``drop_unknown=True`` leaves them out
    instead (``Trace.dropped`` lists them). ``syntax`` ("code" or "prose", default: textfeatures.guess_syntax) is how
    ``find`` and ``path`` read the text's features.
    """
    model = _as_model(model)
    dropped: list[str] = []
    if drop_unknown:
        known = set(model.vocab.chars)
        dropped = sorted({c for c in text if c not in known})
        text = "".join(c for c in text if c in known) if dropped else text
    if not text:
        raise ValueError("the text is empty" + (" once the unknown characters are left out" if dropped else ""))
    syntax = syntax or guess_syntax(text)
    if syntax not in SYNTAXES:
        raise ValueError(f"syntax must be one of {', '.join(SYNTAXES)}, not {syntax!r}")
    ids = model.vocab.encode(text)  # UnknownCharactersError (a ValueError) names what it does not know
    cells = trace_cells(model.model, ids) if model.kind in QUANTITIES else None
    return Trace(model, text, ids, cells, syntax, tuple(dropped))


@dataclass(eq=False, repr=False)
class Trace:
    """One text read by one model; each method is a view of it."""

    model: Model
    text: str
    ids: Tensor  # (T,) the text's character ids
    cells: CellTrace | None  # every cell over the text; None for a model without them read (minGRU, Transformer)
    syntax: str  # "code" or "prose": how the text features read the text
    dropped: tuple[str, ...] = ()  # characters left out by drop_unknown=True

    def __repr__(self) -> str:
        cells = (f"{len(self.cells.quantities)} quantities × {self.cells.layers} × {self.cells.hidden} units"
                 if self.cells is not None else "no recurrent cells")
        return f"<rnnviz.Trace: {len(self.text):,} characters through {self.model!r}; {cells}>"

    # --- cells ------------------------------------------------------------------------------------------------

    def _cells(self) -> CellTrace:
        if self.cells is None:
            raise ValueError(f"a {shape_label(self.model.config)} has no recurrent cells to read; predictions(), "
                             "prediction_strip() and surprisal() work for it (and attention() for a Transformer)")
        return self.cells

    def _cell(self, layer: int, unit: int, quantity: str) -> CellId:
        cell = CellId(int(layer), int(unit), quantity)
        self._cells().check(cell)
        return cell

    def values(self, layer: int, unit: int, quantity: str = "h") -> np.ndarray:
        """(T,) one cell's value after each character (read-only)."""
        return self._cells().cell(self._cell(layer, unit, quantity))

    def _window(self, start: int, end: int | None) -> tuple[int, int]:
        end = len(self.text) if end is None else min(int(end), len(self.text))
        if not 0 <= start < end:
            raise ValueError(f"the window {start}…{end} is outside the text's {len(self.text):,} characters")
        return int(start), end

    def colour(self, layer: int, unit: int, quantity: str = "h", start: int = 0, end: int | None = None) -> HTML:
        """Characters ``start`` … ``end − 1`` coloured by one cell, under the legend, with the explorer's tooltip on
        each character (its position, the exact value, the model's top-5 next characters)."""
        cell = self._cell(layer, unit, quantity)
        start, end = self._window(start, end)
        from rnnviz.figures.explorer import cell_colouring_html

        return HTML(cell_colouring_html(self._cells(), self.model.vocab.chars, self.text, cell, start, end))

    @cached_property
    def tracks(self) -> dict[str, np.ndarray]:
        """The text features (rnnviz.interpret.textfeatures.feature_tracks) read with this trace's syntax."""
        return feature_tracks(self.text, self.syntax)

    def find(self, feature: str | None = None, syntax: str | None = None, by: str = "r", top: int = 10
             ) -> pd.DataFrame:
        """The cells that track the text's features best (rnnviz.interpret.finder.rank_cells), one row per cell,
        best first within each feature: by |r| (``by="r"``), or by the best threshold rule's accuracy
        (``by="accuracy"``, 0/1 features only). ``feature`` keeps one feature (rnnviz.interpret.textfeatures'
        names: string, bracket_depth, indent, …); ``syntax`` reads the text as "code" or "prose" this once."""
        if by not in ("r", "accuracy"):
            raise ValueError(f'by must be "r" or "accuracy", not {by!r}')
        tracks = self.tracks if syntax in (None, self.syntax) else feature_tracks(self.text, syntax)
        if feature is not None:
            if feature not in tracks:
                raise ValueError(f"no feature {feature!r} here; choose {', '.join(tracks)}")
            tracks = {feature: tracks[feature]}
        rankings = rank_cells(self._cells(), tracks, top=top)
        rows = []
        for name, ranking in rankings.items():
            ranked = ranking.by_correlation if by == "r" else ranking.by_accuracy
            for rank, found in enumerate(ranked, start=1):
                cell = found.cell
                rows.append((name, rank, cell.label, cell.layer, cell.unit, cell.quantity, found.r, found.accuracy,
                             found.threshold, found.above, ranking.base_rate))
        return pd.DataFrame(rows, columns=list(FIND_COLUMNS))

    # --- predictions ------------------------------------------------------------------------------------------

    @cached_property
    def predicted(self) -> Predictions:
        """The engine's record of every character's prediction (rnnviz.interpret.surprisal.predictions)."""
        return predictions(self.model.model, self.ids)

    def predictions(self) -> pd.DataFrame:
        """Per predicted character (position 1 on): its surprisal −log p (nats), p, its rank among the model's
        guesses, and the model's top guesses with their probabilities."""
        found, chars = self.predicted, self.model.vocab.chars
        rows = np.arange(1, found.length)
        table = {"position": rows, "character": [self.text[t] for t in rows],
                 "surprisal": found.surprisal[rows], "p": found.true_prob[rows], "rank": found.rank[rows]}
        for j in range(found.guess_ids.shape[1]):
            table[f"guess {j + 1}"] = [chars[i] for i in found.guess_ids[rows, j]]
            table[f"p {j + 1}"] = found.guess_probs[rows, j]
        return pd.DataFrame(table)

    def prediction_strip(self, start: int = 0, end: int | None = None) -> HTML:
        """Characters ``start`` … ``end − 1`` (default: ``STRIP_CHARS`` of them) as columns: each character coloured
        by its surprisal, the model's top guesses for that place under it; the two legends above."""
        start, end = self._window(start, start + STRIP_CHARS if end is None else end)
        found = self.predicted
        return HTML(prediction_strip.legends_html(found.surprisal[start:end])
                    + prediction_strip.strip_html(self.text, found, self.model.vocab.chars, start, end))

    def surprisal(self, start: int = 0, end: int | None = None) -> go.Figure:
        """Surprisal over the whole text (each character a dot, a running mean), the window ``start`` … ``end``
        (default: the strip's) shaded."""
        from rnnviz.figures.explorer import surprisal_figure

        return surprisal_figure(self.predicted.surprisal, self._window(start, start + STRIP_CHARS if end is None
                                                                       else end))

    def loss(self) -> float:
        """Mean surprisal over the text, nats/char."""
        return self.predicted.loss()

    # --- gates and the state's path ---------------------------------------------------------------------------

    def gates(self, histograms: bool = False) -> go.Figure:
        """Gate saturation over the text (LSTM only; the LSTM gates page's figure): per layer and gate, the shares
        shut, in between and wide open; ``histograms=True`` draws every gate's histogram instead."""
        from rnnviz.figures.gates import saturation_bars_figure, saturation_histograms_figure
        from rnnviz.lessons.gates import gate_saturation

        stats = gate_saturation(self.model.model, self.ids)  # a ValueError in words for a model without LSTM gates
        return saturation_histograms_figure(stats) if histograms else saturation_bars_figure(stats)

    def path(self, layer: int = 0, quantity: str = "h", feature: str | None = None, start: int = 0,
             end: int | None = None, at: int | None = None) -> go.Figure:
        """The layer's state (h, or an LSTM's c) after each character ``start`` … ``end − 1`` on its first two
        principal axes, joined in reading order and coloured by a text feature (default: "string"). ``at`` rings
        that character and marks the states nearest to it in all units."""
        from rnnviz.figures.trajectory import trajectory_figure
        from rnnviz.interpret.trajectory import nearest, project

        if quantity not in ("h", "c"):
            raise ValueError(f'the path is of a state: quantity "h" or "c", not {quantity!r}')
        self._cell(layer, 0, quantity)
        start, end = self._window(start, end)
        feature = feature or "string"
        if feature not in self.tracks:
            raise ValueError(f"no feature {feature!r} here; choose {', '.join(self.tracks)}")
        states = self._cells().block(int(layer), quantity)[start:end]  # (T', H)
        near = []
        if at is not None:
            if not start <= at < end:
                raise ValueError(f"at = {at} is outside the window {start}…{end - 1}")
            near = nearest(states, at - start, PATH_NEIGHBOURS, PATH_EXCLUDE)
        return trajectory_figure(project(states), self.text[start:end], self.tracks[feature][start:end],
                                 FEATURES[feature].label, None if at is None else at - start, near, offset=start)


def attention(model: Model | str | Path, text: str, t: int | None = None) -> HTML:
    """A Transformer's attention from position ``t`` (default: the last character) over the characters it reads,
    one row per (layer, head) (rnnviz.interpret.hidden_state.attention_at; the hidden-state page's table)."""
    from rnnviz.figures.hidden_state import attention_table
    from rnnviz.interpret.hidden_state import attention_at

    model = _as_model(model)
    if model.kind != "transformer":
        raise ValueError(f"attention needs a Transformer (such as transformer-english-docs); this is a "
                         f"{shape_label(model.config)}")
    ids = model.vocab.encode(text)
    if not len(ids):
        raise ValueError("the text is empty")
    t = len(ids) - 1 if t is None else int(t)
    if not 0 <= t < len(ids):
        raise ValueError(f"t = {t} is outside the text's {len(ids)} characters")
    start, weights = attention_at(model.model, ids, t)
    return HTML(attention_table(weights, text, start))
