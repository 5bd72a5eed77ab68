"""The course's figures: each built on `matplotlib.figure.Figure`, never pyplot, so that it
needs no display and no global figure manager keeps it open; a notebook shows it with
`display(figure)`, a script saves it with `path=`.

    plot_loss_curve           section 4: the loss per epoch, whole and zoomed on the last
                              epochs, with both floors and the held-out loss
    plot_no_peeking           section 3: which positions each direction's states read
    plot_context_comparison   section 6: the sense gap of every word, and the pooled groups
    plot_halves               section 6: the forward and the backward half of each layer
    plot_sense_pca            section 6: one word's occurrences per layer, by sense
    plot_layer_weights        section 7: the learned layer weights and single-layer probes
    plot_against_control      sections 6 and 7: a reading per layer, the pre-trained biLM
                              beside the untrained biLM it started from
    plot_relative_ranks       section 8: where the relatives of unseen words rank

Every figure is at most `NOTEBOOK_WIDTH_IN` wide, the width a notebook shows it at without
shrinking it, and writes no text under 8 pt there (`smallest_text` measures it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import ScalarFormatter
from torch import nn

from course.corpus import HELDOUT_LABELS, PHRASES_OF, SENSE_LABELS
from course.harness import Sections

from .analysis import TaskResult, target_vectors

__all__ = ["NOTEBOOK_WIDTH_IN", "ControlPanel", "plot_against_control",
           "plot_context_comparison", "plot_halves", "plot_layer_weights", "plot_loss_curve",
           "plot_no_peeking", "plot_relative_ranks", "plot_sense_pca", "smallest_text"]
# JupyterLab's notebook column is about 850 px wide beside its file browser; an inline PNG
# (100 dpi) wider than that is shrunk to fit, and its text with it.
NOTEBOOK_WIDTH_IN = 8.5
SMALL = 8.5  # points: legends, bar values and point labels
UNTRAINED_COLOUR = "0.6"  # the control is grey in every figure, the pre-trained biLM C0


def smallest_text(figure: Figure, width_in: float = NOTEBOOK_WIDTH_IN) -> float:
    """The size in points of the smallest visible text of `figure` as a notebook shows it:
    drawn `width_in` wide at most, so a wider figure's text shrinks with it."""
    import io

    from matplotlib.text import Text

    figure.savefig(io.BytesIO(), format="png")  # lays out ticks, legends and labels
    scale = min(1.0, width_in / figure.get_figwidth())
    sizes = [t.get_fontsize() for t in figure.findobj(Text)
             if t.get_visible() and t.get_text().strip() and t.get_figure() is not None]
    return min(sizes) * scale


def _legend_below(ax) -> None:
    """`ax`'s legend under its x label, off the data (a legend inside the axes hid the
    anisotropy baseline); the constrained layout makes room for it."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=2, fontsize=SMALL,
              frameon=False)


def _saved(figure: Figure, path: str | Path | None) -> Figure:
    """`figure`, saved to `path` first (any format matplotlib knows from the suffix; folders
    are created) unless `path` is None."""
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=120)
    return figure


def _pooled_bars(ax, comparison: Any, baseline: torch.Tensor | None, title: str) -> None:
    """Same-sense and different-sense mean similarity per layer (±1 sd over pairs), and
    the anisotropy baseline of each layer as a dotted step."""
    layers = np.arange(comparison.num_layers)
    width = 0.38
    for offset, same, name in ((-width / 2, True, "same sense"),
                               (width / 2, False, "different sense")):
        chosen = comparison.select(same)
        ax.bar(layers + offset, chosen.mean(dim=0).numpy(), width, capsize=4,
               yerr=chosen.std(dim=0).numpy(), label=f"{name} ({len(chosen)} pairs)")
    if baseline is not None:
        ax.hlines(baseline.numpy(), layers - 0.45, layers + 0.45, colors="black",
                  linestyles=":", label="two different words (anisotropy)")
    ax.set_xticks(layers, [f"layer {k}" for k in layers])
    ax.set_xlabel("layer")
    ax.set_ylabel("mean cosine similarity")
    ax.set_ylim(min(0.0, float(comparison.similarity.min())), 1.1)
    ax.set_title(title, fontsize=10)
    _legend_below(ax)


def plot_context_comparison(
    comparison: Any, baseline: torch.Tensor | None = None, path: str | Path | None = None,
) -> Figure:
    """Draw a `ContextComparison` (section 6): the sense gap of every word, and the two
    groups pooled.

    Left, per layer, one bar per target word: its mean same-sense similarity minus its mean
    different-sense similarity, 0 where the layer does not tell the senses apart. Right,
    the same-sense and different-sense similarity of all pairs per layer (mean ± 1 sd over
    pairs), with `baseline` (`analyses.analysis.anisotropy_baseline`), the level of two
    unrelated words.

    Args:
        comparison: the result of section 6's `compare_contexts`.
        baseline: (num_layers,) the anisotropy baseline per layer, or None to leave it out.
        path: where to save the figure; None to only return it.
    """
    layers = np.arange(comparison.num_layers)
    figure = Figure(figsize=(NOTEBOOK_WIDTH_IN, 4.0), layout="constrained")
    gap_ax, pooled_ax = figure.subplots(1, 2)
    width = 0.8 / len(comparison.words)
    for w, word in enumerate(comparison.words):
        gap = comparison.select(True, word).mean(0) - comparison.select(False, word).mean(0)
        gap_ax.bar(layers + (w - (len(comparison.words) - 1) / 2) * width, gap.numpy(), width,
                   label=word)
    gap_ax.axhline(0, color="black", linewidth=0.8)
    gap_ax.set_xticks(layers, [f"layer {k}" for k in layers])
    gap_ax.set_xlabel("layer")
    gap_ax.set_ylabel("same-sense minus different-sense cosine")
    gap_ax.set_title("How far each layer tells a word's senses apart", fontsize=10)
    _legend_below(gap_ax)
    _pooled_bars(pooled_ax, comparison, baseline,
                 f"All {len(comparison.pairs)} pairs (mean ± 1 sd)")
    return _saved(figure, path)


def plot_halves(
    halves: dict[str, Any], baseline: torch.Tensor | None = None,
    path: str | Path | None = None,
) -> Figure:
    """`analyses.analysis.compare_halves`' two comparisons side by side: what the forward half
    (the words before the target) and the backward half (the words after it) tell of the
    sense. `baseline`, as in `plot_context_comparison`, is that of the whole vectors."""
    figure = Figure(figsize=(NOTEBOOK_WIDTH_IN, 3.8), layout="constrained")
    axes = figure.subplots(1, len(halves))
    for ax, (direction, comparison) in zip(axes, halves.items(), strict=True):
        _pooled_bars(ax, comparison, baseline, f"{direction} half of each layer")
        ax.get_legend().remove()  # the panels share one legend: two ran into each other
    figure.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=3,
                  fontsize=SMALL, frameon=False)
    return _saved(figure, path)


def plot_sense_pca(
    sections: Sections, model: nn.Module, word2idx: dict[str, int], word: str,
    labels: Sequence[tuple[str, str, str]] = SENSE_LABELS + HELDOUT_LABELS,
    path: str | Path | None = None,
) -> Figure:
    """Every occurrence of `word` in `labels`, one panel per layer, on the layer's first two
    principal components: the colour is the sense, the marker the sentence's opening (its
    k in "opening k"), hollow for held-out sentences. The legend, below the panels, says
    which is which; no point carries a label.

    Layer 0 is one point: the word without its context. The axes' percentages say how much
    of the spread of the word's vectors each component holds. The embeddings come from
    `sections`' section 5.
    """
    chosen = [label for label in labels if label[1] == word]
    if not chosen:
        raise ValueError(f"no labelled sentence holds {word!r}")
    vectors = target_vectors(sections, model, word2idx, chosen)  # (L, N, D)
    senses = list(dict.fromkeys(sense for _, _, sense in chosen))
    held_out = {sentence for sentence, _, _ in HELDOUT_LABELS}
    openings = sorted({PHRASES_OF[s][0] for s, _, _ in chosen if s in PHRASES_OF})
    markers = dict(zip(openings, "o^sDvP*X", strict=False))
    figure = Figure(figsize=(NOTEBOOK_WIDTH_IN, 3.6), layout="constrained")
    for layer, (ax, points) in enumerate(zip(figure.subplots(1, len(vectors)), vectors,
                                             strict=True)):
        centred = points - points.mean(dim=0)
        _, singular, directions = torch.linalg.svd(centred, full_matrices=False)
        ax.set_title(f"'{word}', layer {layer}", fontsize=10)
        if singular[0] < 1e-6:  # one vector in every sentence: nothing to spread out
            ax.scatter([0], [0], s=40, color="grey")
            ax.annotate("the same vector\nin every sentence", (0, 0), xytext=(0, 10),
                        textcoords="offset points", ha="center", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        xy = (centred @ directions[:2].T).numpy()  # (N, 2)
        share = (singular**2 / (singular**2).sum())[:2].numpy()
        for n, (sentence, _, sense) in enumerate(chosen):
            colour = f"C{senses.index(sense)}"
            opening = PHRASES_OF[sentence][0] if sentence in PHRASES_OF else None
            ax.scatter(xy[n, 0], xy[n, 1], s=36, marker=markers.get(opening, "o"),
                       edgecolors=colour, linewidths=1.2,
                       facecolors="none" if sentence in held_out else colour)
        ax.set_xlabel(f"PC 1 ({share[0]:.0%})")
        ax.set_ylabel(f"PC 2 ({share[1]:.0%})")
        ax.tick_params(labelsize=8)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], linestyle="none", marker="o", color=f"C{s}", label=sense)
               for s, sense in enumerate(senses)]
    handles += [Line2D([], [], linestyle="none", marker=markers[k], color="0.3",
                       markerfacecolor="0.3", label=f"opening {k}")
                for k in openings]
    handles.append(Line2D([], [], linestyle="none", marker="o", color="0.3",
                          markerfacecolor="none", label="held-out sentence (hollow)"))
    figure.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=SMALL)
    return _saved(figure, path)


def plot_layer_weights(
    results: Sequence[Sequence[TaskResult]], path: str | Path | None = None
) -> Figure:
    """Bar charts of the learned layer weights and single-layer probe accuracy per task.

    Args:
        results: one list of `analyses.analysis.TaskResult`s per seed, the tasks in the same
            order each time; bars are means over seeds, error bars one standard deviation
            (none for one seed). The weights have a line at uniform (1 / L), the probes one
            at each task's chance.
        path: where to save the figure; None to only return it.
    """
    names = [result.name for result in results[0]]
    weights = np.array([[r.weights.numpy() for r in seed] for seed in results])  # (S, T, L)
    probes = np.array([[r.layer_accuracy.numpy() for r in seed] for seed in results])
    figure = Figure(figsize=(NOTEBOOK_WIDTH_IN, 4.0), layout="constrained")
    weight_ax, probe_ax = figure.subplots(1, 2)
    layers = np.arange(weights.shape[-1])
    width = 0.8 / len(names)
    spread = len(results) > 1
    weight_ax.axhline(1 / len(layers), color="grey", linestyle=":",
                      label=f"uniform, $1/(L+1)$ = {1 / len(layers):.2f}")
    for t, result in enumerate(results[0]):
        offset = (t - (len(names) - 1) / 2) * width
        label = f"{result.name} (n = {result.n})"
        colour = f"C{t}"
        weight_ax.bar(layers + offset, weights[:, t].mean(0), width, label=label, capsize=4,
                      color=colour, yerr=weights[:, t].std(0, ddof=1) if spread else None)
        probe_ax.bar(layers + offset, probes[:, t].mean(0), width, label=label, capsize=4,
                     color=colour, yerr=probes[:, t].std(0, ddof=1) if spread else None)
        probe_ax.axhline(result.chance, color=colour, linestyle="--", linewidth=1,
                         label=f"{result.name}: chance {result.chance:.2f}")
    for ax, ylabel, title in (
        (weight_ax, "softmax weight $s_j$", "Learned layer weights"),
        (probe_ax, "held-out accuracy", "One probe per layer"),
    ):
        ax.set_xticks(layers, [f"layer {k}" for k in layers])
        ax.set_xlabel("layer")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title} (mean ± 1 sd over {len(results)} seeds)" if spread
                     else f"{title} (one seed)", fontsize=10)
        _legend_below(ax)
    probe_ax.set_ylim(0, 1.05)
    return _saved(figure, path)


class ControlPanel(NamedTuple):
    """One panel of `plot_against_control`: a reading per layer of the pre-trained biLM
    (`trained`) and of the untrained one it started from (`untrained`), with a level to
    read both against (chance, or 0 for a gap) when `level` is not None."""

    title: str
    ylabel: str
    trained: Sequence[float]
    untrained: Sequence[float]
    level: float | None = None
    level_label: str = ""


def plot_against_control(panels: Sequence[ControlPanel],
                         path: str | Path | None = None) -> Figure:
    """One panel per reading, two to a row: per layer, the untrained biLM's bar (grey) beside
    the pre-trained biLM's, each with its value written above it, and the panel's level as
    a line (one style per kind of level). What pre-training adds is the step from grey to
    blue; the legend sits below the panels, off the data."""
    columns = min(2, len(panels))
    rows = -(-len(panels) // columns)
    figure = Figure(figsize=(4.2 * columns, 3.3 * rows + 0.5), layout="constrained")
    axes = np.atleast_1d(figure.subplots(rows, columns)).ravel()
    styles: dict[str, str] = {}
    width = 0.38
    for ax, panel in zip(axes, panels, strict=False):
        layers = np.arange(len(panel.trained))
        values = [*panel.trained, *panel.untrained, *([panel.level] if panel.level is not None
                                                      else [])]
        for offset, heights, colour, name in (
            (-width / 2, panel.untrained, UNTRAINED_COLOUR, "untrained biLM (same shape, seed)"),
            (width / 2, panel.trained, "C0", "pre-trained biLM"),
        ):
            bars = ax.bar(layers + offset, heights, width, color=colour, label=name)
            ax.bar_label(bars, fmt="%.2f", fontsize=8, padding=2)
        if panel.level is not None:
            label = panel.level_label or f"level {panel.level:.2f}"
            style = styles.setdefault(label, ("--", ":", "-.")[len(styles) % 3])
            ax.axhline(panel.level, color="black", linestyle=style, linewidth=1, label=label)
        top = max(values)
        ax.set_ylim(min(0.0, min(values) * 1.2), top + 0.15 * max(abs(top), 0.1))
        ax.set_xticks(layers, [f"layer {k}" for k in layers])
        ax.set_ylabel(panel.ylabel)
        ax.set_title(panel.title, fontsize=10)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    handles: dict[str, Any] = {}
    for ax in axes[: len(panels)]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    figure.legend(list(handles.values()), list(handles), loc="outside lower center",
                  ncols=min(len(handles), 2), fontsize=9)
    return _saved(figure, path)


def plot_loss_curve(
    training: Sequence[float], held_out: Sequence[float], floors: dict[str, float],
    held_out_floor: float, guessing: float, zoom_from: int | None = None,
    path: str | Path | None = None,
) -> Figure:
    """Section 4's pre-training, per epoch (0: before training): left, the whole run from
    `guessing` (2 ln V) down; right, zoomed on the epochs from `zoom_from` (default: the
    last half), where the training loss, the held-out loss and the floors they approach
    (`floors`, of the training sentences; `held_out_floor`, of the held-out ones) sit within
    a few tenths of each other. The legend is below the panels, off the data."""
    epochs = np.arange(len(training))
    zoom_from = len(training) // 2 if zoom_from is None else zoom_from
    figure = Figure(figsize=(NOTEBOOK_WIDTH_IN, 4.2), layout="constrained")
    whole, zoom = figure.subplots(1, 2)
    styles = [("black", "--"), ("0.45", ":")]
    for ax, start in ((whole, 0), (zoom, zoom_from)):
        shown = slice(start, None)
        ax.plot(epochs[shown], np.asarray(training)[shown], marker=".", color="C0",
                label="training sentences")
        if len(held_out):
            ax.plot(epochs[shown], np.asarray(held_out)[shown], marker=".", color="C1",
                    label="held-out sentences")
        for (name, value), (colour, style) in zip(floors.items(), styles, strict=False):
            ax.axhline(value, color=colour, linestyle=style, linewidth=1.2,
                       label=f"floor, training: {name} ({value:.3f})")
        ax.axhline(held_out_floor, color="C1", linestyle="--", linewidth=1,
                   label=f"floor, held-out: the phrases ({held_out_floor:.3f})")
        ax.set_xlabel("epoch")
    whole.axhline(guessing, color="0.6", linestyle="-.", linewidth=1,
                  label=f"guessing: $2 \\ln V$ ({guessing:.2f})")
    whole.set_ylabel("forward CE + backward CE")
    whole.set_title("The whole run", fontsize=10)
    zoom.set_title(f"Zoomed: epochs {zoom_from}-{len(training) - 1}", fontsize=10)
    last = [*np.asarray(training)[zoom_from:], *np.asarray(held_out)[zoom_from:],
            *floors.values(), held_out_floor]
    spread = max(last) - min(last)
    zoom.set_ylim(min(last) - 0.1 * spread, max(last) + 0.1 * spread)
    handles: dict[str, Any] = {}
    for ax in (whole, zoom):
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    figure.legend(list(handles.values()), list(handles), loc="outside lower center",
                  ncols=2, fontsize=SMALL)
    return _saved(figure, path)


def plot_no_peeking(forward: np.ndarray, backward: np.ndarray,
                    path: str | Path | None = None) -> Figure:
    """Section 3's no-peeking check as two heatmaps: row k, the token changed; column t, the
    position read; the colour, how far the forward (left) or backward (right) half of the
    top layer at t moved (the largest change, log scale; white: exactly 0). A forward state
    reads tokens up to its own position, so its map is white left of the diagonal; a
    backward one reads from its position on, so its map is white right of it."""
    from matplotlib.colors import LogNorm

    figure = Figure(figsize=(NOTEBOOK_WIDTH_IN, 3.9), layout="constrained")
    axes = figure.subplots(1, 2)
    moved = np.concatenate([forward[forward > 0], backward[backward > 0]])
    norm = LogNorm(vmin=max(float(moved.min()), 1e-6), vmax=float(moved.max())) if len(
        moved) else None
    for ax, change, name in ((axes[0], forward, "forward"), (axes[1], backward, "backward")):
        shown = np.ma.masked_where(change <= 0, change)
        image = ax.imshow(shown, cmap="viridis", norm=norm, origin="upper")
        ax.set_xlabel("position t of the state")
        ax.set_ylabel("position k of the changed token")
        ax.set_title(f"{name} half: which tokens it read", fontsize=10)
        ticks = np.arange(change.shape[0])
        ax.set_xticks(ticks)
        ax.set_yticks(ticks)
        ax.tick_params(labelsize=8)
    colourbar = figure.colorbar(image, ax=axes, shrink=0.85)
    colourbar.set_label("largest change of the state (white: 0)", fontsize=9)
    colourbar.ax.tick_params(labelsize=8)
    return _saved(figure, path)


def plot_relative_ranks(found: dict[str, Sequence[Any]], chance: float,
                        path: str | Path | None = None) -> Figure:
    """Section 8's words the corpus lacks: for each query (a row) and each model (a
    colour), the rank of its relative among the words nearest to it by layer 0 (1 = the
    nearest; log scale), with chance, (candidates + 1) / 2, as a dashed line."""
    models = list(found)
    queries = [f"{n.query} -> {n.relative}" for n in found[models[0]]]
    figure = Figure(figsize=(NOTEBOOK_WIDTH_IN, 0.32 * len(queries) + 1.6),
                    layout="constrained")
    ax = figure.subplots()
    rows = np.arange(len(queries))
    markers = "osD^v"
    for m, model in enumerate(models):
        offset = (m - (len(models) - 1) / 2) * 0.22
        ax.scatter([n.rank for n in found[model]], rows + offset, s=28, color=f"C{m}",
                   marker=markers[m % len(markers)], label=model, zorder=3)
    ax.axvline(chance, color="black", linestyle="--", linewidth=1,
               label=f"chance: rank {chance:.1f}")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(ScalarFormatter())  # 1, 10, 100 rather than powers
    ax.set_yticks(rows, queries, fontsize=8.5)
    ax.invert_yaxis()
    ax.set_xlabel("rank of the relative among the nearest words by layer 0 (1 = nearest)")
    ax.grid(axis="x", alpha=0.3)
    figure.legend(loc="outside lower center", ncols=2, fontsize=SMALL)
    return _saved(figure, path)
