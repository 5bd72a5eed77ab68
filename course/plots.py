"""The course's figures: each built on `matplotlib.figure.Figure`, never pyplot, so that it
needs no display and no global figure manager keeps it open; a notebook shows it with
`display(figure)`, a script saves it with `path=`.

    plot_context_comparison   section 6: the sense gap of every word, and the pooled groups
    plot_halves               section 6: the forward and the backward half of each layer
    plot_sense_pca            section 6: one word's occurrences per layer, by sense
    plot_layer_weights        section 7: the learned layer weights and single-layer probes
    plot_against_control      sections 6 and 7: a reading per layer, the pre-trained biLM
                              beside the untrained biLM it started from
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from matplotlib.figure import Figure
from torch import nn

from .analysis import TaskResult, target_vectors
from .corpus import HELDOUT_LABELS, PHRASES_OF, SENSE_LABELS
from .harness import Sections

__all__ = ["ControlPanel", "plot_against_control", "plot_context_comparison", "plot_halves",
           "plot_layer_weights", "plot_sense_pca"]
UNTRAINED_COLOUR = "0.6"  # the control is grey in every figure, the pre-trained biLM C0


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
    ax.set_title(title)
    ax.legend(loc="lower left", fontsize="small")


def plot_context_comparison(
    comparison: Any, baseline: torch.Tensor | None = None, path: str | Path | None = None,
) -> Figure:
    """Draw a `ContextComparison` (section 6): the sense gap of every word, and the two
    groups pooled.

    Left, per layer, one bar per target word: its mean same-sense similarity minus its mean
    different-sense similarity, 0 where the layer does not tell the senses apart. Right,
    the same-sense and different-sense similarity of all pairs per layer (mean ± 1 sd over
    pairs), with `baseline` (`course.analysis.anisotropy_baseline`), the level of two
    unrelated words.

    Args:
        comparison: the result of section 6's `compare_contexts`.
        baseline: (num_layers,) the anisotropy baseline per layer, or None to leave it out.
        path: where to save the figure; None to only return it.
    """
    layers = np.arange(comparison.num_layers)
    figure = Figure(figsize=(12, 4.8), layout="constrained")
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
    gap_ax.set_title("How far each layer tells a word's senses apart")
    gap_ax.legend(fontsize="small")
    _pooled_bars(pooled_ax, comparison, baseline,
                 f"All {len(comparison.pairs)} pairs (mean ± 1 sd)")
    return _saved(figure, path)


def plot_halves(
    halves: dict[str, Any], baseline: torch.Tensor | None = None,
    path: str | Path | None = None,
) -> Figure:
    """`course.analysis.compare_halves`' two comparisons side by side: what the forward half
    (the words before the target) and the backward half (the words after it) tell of the
    sense. `baseline`, as in `plot_context_comparison`, is that of the whole vectors."""
    figure = Figure(figsize=(12, 4.5), layout="constrained")
    for ax, (direction, comparison) in zip(figure.subplots(1, len(halves)), halves.items(),
                                           strict=True):
        _pooled_bars(ax, comparison, baseline, f"{direction} half of each layer")
    return _saved(figure, path)


def plot_sense_pca(
    sections: Sections, model: nn.Module, word2idx: dict[str, int], word: str,
    labels: Sequence[tuple[str, str, str]] = SENSE_LABELS + HELDOUT_LABELS,
    path: str | Path | None = None,
) -> Figure:
    """Every occurrence of `word` in `labels`, one panel per layer, on the layer's first two
    principal components: coloured by sense, hollow for held-out sentences, each point named
    by its sentence's opening and ending ("o2 e3": opening 2, ending 3 of its sense).

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
    figure = Figure(figsize=(4.2 * len(vectors), 4.8), layout="constrained")
    for layer, (ax, points) in enumerate(zip(figure.subplots(1, len(vectors)), vectors,
                                             strict=True)):
        centred = points - points.mean(dim=0)
        _, singular, directions = torch.linalg.svd(centred, full_matrices=False)
        ax.set_title(f"'{word}', layer {layer}")
        if singular[0] < 1e-6:  # one vector in every sentence: nothing to spread out
            ax.scatter([0], [0], s=40, color="grey")
            ax.annotate("the same vector\nin every sentence", (0, 0), xytext=(8, 8),
                        textcoords="offset points")
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        xy = (centred @ directions[:2].T).numpy()  # (N, 2)
        share = (singular**2 / (singular**2).sum())[:2].numpy()
        for s, sense in enumerate(senses):
            for hollow in (False, True):
                rows = [n for n, (sentence, _, x) in enumerate(chosen)
                        if x == sense and (sentence in held_out) == hollow]
                if rows:
                    ax.scatter(xy[rows, 0], xy[rows, 1], s=40, color=f"C{s}",
                               facecolors="none" if hollow else f"C{s}",
                               label=f"{sense}{' (held out)' if hollow else ''}")
        for (sentence, _, _), (x, y) in zip(chosen, xy, strict=True):
            if sentence in PHRASES_OF:
                k, j = PHRASES_OF[sentence]
                ax.annotate(f"o{k} e{j}", (x, y), fontsize=6, alpha=0.7,
                            xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel(f"PC 1 ({share[0]:.0%})")
        ax.set_ylabel(f"PC 2 ({share[1]:.0%})")
    figure.legend(*figure.axes[-1].get_legend_handles_labels(), loc="outside lower center",
                  ncols=2 * len(senses), fontsize="small")
    return _saved(figure, path)


def plot_layer_weights(
    results: Sequence[Sequence[TaskResult]], path: str | Path | None = None
) -> Figure:
    """Bar charts of the learned layer weights and single-layer probe accuracy per task.

    Args:
        results: one list of `course.analysis.TaskResult`s per seed, the tasks in the same
            order each time; bars are means over seeds, error bars one standard deviation
            (none for one seed). The weights have a line at uniform (1 / L), the probes one
            at each task's chance.
        path: where to save the figure; None to only return it.
    """
    names = [result.name for result in results[0]]
    weights = np.array([[r.weights.numpy() for r in seed] for seed in results])  # (S, T, L)
    probes = np.array([[r.layer_accuracy.numpy() for r in seed] for seed in results])
    figure = Figure(figsize=(11, 4.5), layout="constrained")
    weight_ax, probe_ax = figure.subplots(1, 2)
    layers = np.arange(weights.shape[-1])
    width = 0.8 / len(names)
    spread = len(results) > 1
    weight_ax.axhline(1 / len(layers), color="grey", linestyle=":", label="uniform, 1 / L")
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
        (weight_ax, "softmax weight s_j", "Learned layer weights"),
        (probe_ax, "held-out accuracy", "One probe per layer"),
    ):
        ax.set_xticks(layers, [f"layer {k}" for k in layers])
        ax.set_xlabel("layer")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title} (mean ± 1 sd over {len(results)} seeds)" if spread
                     else f"{title} (one seed)")
        ax.legend(fontsize="small")
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
