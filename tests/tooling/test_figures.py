"""The given pictures of sections 6 and 7 (`analyses.plots`, not learner code): each draws what
it says, from the numbers it is given, without pyplot, and saves where it is told."""

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from analyses import analysis, plots
from course.pretrained import pretrained
from tools import reference

REFERENCE = reference()
corpus, context = REFERENCE.corpus, REFERENCE.context
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def trained():
    return pretrained(REFERENCE.package)


@pytest.fixture(scope="module")
def comparison(trained):
    return context.compare_contexts(trained.model, trained.word2idx)


@pytest.fixture(scope="module")
def baseline(trained):
    return analysis.anisotropy_baseline(REFERENCE, trained.model, trained.word2idx)


def bar_heights(ax) -> list[float]:
    return [round(p.get_height(), 5) for p in ax.patches]


def test_context_comparison_draws_each_words_gap_and_the_pooled_groups(comparison, baseline,
                                                                       tmp_path):
    path = tmp_path / "new folder" / "context.png"
    figure = plots.plot_context_comparison(comparison, baseline, path)
    assert isinstance(figure, Figure) and path.read_bytes()[:8] == PNG
    gap_ax, pooled_ax = figure.axes
    expected = [round(float(comparison.select(True, w).mean(0)[k]
                            - comparison.select(False, w).mean(0)[k]), 5)
                for w in comparison.words for k in range(3)]
    assert bar_heights(gap_ax) == expected
    pooled = [round(float(v), 5) for same in (True, False)
              for v in comparison.select(same).mean(0)]
    assert bar_heights(pooled_ax) == pooled
    (lines,) = [c for c in pooled_ax.collections if "anisotropy" in c.get_label()]
    levels = np.array(lines.get_segments())[:, 0, 1]
    assert np.allclose(sorted(levels), sorted(baseline.tolist())), "one baseline per layer"
    legend = " ".join(t.get_text() for t in pooled_ax.get_legend().get_texts())
    assert f"({len(comparison.select(True))} pairs)" in legend and "anisotropy" in legend


def test_halves_draw_one_panel_per_direction(trained, baseline):
    halves = analysis.compare_halves(REFERENCE, trained.model, trained.word2idx)
    figure = plots.plot_halves(halves, baseline)
    assert [ax.get_title() for ax in figure.axes] == ["forward half of each layer",
                                                      "backward half of each layer"]
    for ax, half in zip(figure.axes, halves.values(), strict=True):
        assert bar_heights(ax) == [round(float(v), 5) for same in (True, False)
                                   for v in half.select(same).mean(0)]


def test_the_halves_are_the_two_halves_of_each_layer(trained):
    labels = corpus.SENSE_LABELS[:2]
    halves = analysis.compare_halves(REFERENCE, trained.model, trained.word2idx, labels)
    first, second = REFERENCE.extract.get_elmo_embeddings(
        trained.model, [s for s, _, _ in labels], trained.word2idx)
    k, j = (corpus.tokenize(s).index(w) for s, w, _ in labels)
    for direction, part in (("forward", slice(0, 256)), ("backward", slice(256, None))):
        expected = torch.nn.functional.cosine_similarity(first[:, k, part], second[:, j, part],
                                                         dim=-1)
        assert torch.allclose(halves[direction].similarity[0], expected, atol=1e-5), direction


def test_sense_pca_draws_every_occurrence_per_layer(trained, tmp_path):
    path = tmp_path / "pca.png"
    figure = plots.plot_sense_pca(REFERENCE, trained.model, trained.word2idx, "bank", path=path)
    assert path.read_bytes()[:8] == PNG and len(figure.axes) == 3
    layer0, *lstm = figure.axes
    assert sum(len(c.get_offsets()) for c in layer0.collections) == 1, "layer 0 is one point"
    occurrences = sum(w == "bank" for _, w, _ in corpus.SENSE_LABELS + corpus.HELDOUT_LABELS)
    for ax in lstm:
        assert sum(len(c.get_offsets()) for c in ax.collections) == occurrences
        assert len(ax.texts) == 0, "no point carries a label: the legend says it all"
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert {"finance", "river", "opening 0", "held-out sentence (hollow)"} <= set(legend), (
        "colour for the sense, marker for the opening, hollow for held out")


def test_layer_weights_draw_means_chance_and_n(trained, tmp_path):
    task = analysis.sense_task(REFERENCE, trained.model, trained.word2idx)
    results = [[analysis.evaluate_task(REFERENCE, task, seed=s, epochs=5)] for s in (0, 1)]
    path = tmp_path / "weights.png"
    figure = plots.plot_layer_weights(results, path)
    assert path.read_bytes()[:8] == PNG
    weight_ax, probe_ax = figure.axes
    expected = torch.stack([seed[0].weights for seed in results]).mean(0).tolist()
    assert np.allclose([p.get_height() for p in weight_ax.patches], expected, atol=1e-6)
    expected = torch.stack([seed[0].layer_accuracy for seed in results]).mean(0).tolist()
    assert np.allclose([p.get_height() for p in probe_ax.patches], expected, atol=1e-6)
    chance = [line.get_ydata()[0] for line in probe_ax.lines if "chance" in line.get_label()]
    assert chance == [0.5], "one chance line for the one task"
    legend = " ".join(t.get_text() for t in probe_ax.get_legend().get_texts())
    assert f"n = {len(task.labels)}" in legend and "chance 0.50" in legend


def test_the_control_stands_beside_every_reading_with_its_value_and_level(tmp_path):
    panels = [plots.ControlPanel("gap", "cosine", [0.0, 0.24, 0.28], [0.0, 0.08, 0.07], 0.0,
                                 "no gap"),
              plots.ControlPanel("1-NN", "accuracy", [0.33, 1.0, 1.0], [0.33, 0.72, 0.69],
                                 0.33, "chance"),
              plots.ControlPanel("weights", "s_j", [0.2, 0.4, 0.4], [0.2, 0.41, 0.39])]
    path = tmp_path / "control.png"
    figure = plots.plot_against_control(panels, path)
    assert path.read_bytes()[:8] == PNG
    shown = [ax for ax in figure.axes if ax.get_visible()]
    assert len(shown) == 3
    for ax, panel in zip(shown, panels, strict=True):
        assert bar_heights(ax) == [round(v, 5) for v in (*panel.untrained, *panel.trained)]
        written = [t.get_text() for t in ax.texts]
        assert written == [f"{v:.2f}" for v in (*panel.untrained, *panel.trained)], (
            "every bar says its value")
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert {"untrained biLM (same shape, seed)", "pre-trained biLM"} <= set(legend)
    assert "no gap" in legend and "chance" in legend, "each level is named, off the data"
    styles = {line.get_label(): line.get_linestyle() for ax in shown for line in ax.lines}
    assert styles["no gap"] != styles["chance"], "two kinds of level, two styles"


def test_the_loss_curve_zooms_on_the_last_epochs_with_both_floors_and_held_out():
    training = [9.6, 6.7, 4.4, 2.6, 1.6, 1.31, 1.2, 1.15, 1.12, 1.12, 1.107]
    held_out = [9.6, 6.7, 4.4, 2.7, 1.7, 1.45, 1.38, 1.39, 1.38, 1.41, 1.43]
    floors = {"the phrases": 1.086, "the sentences by heart": 1.021}
    figure = plots.plot_loss_curve(training, held_out, floors, 1.086, 9.57)
    whole, zoom = figure.axes
    assert [len(line.get_xdata()) for line in zoom.lines[:2]] == [6, 6], "epochs 5-10"
    low, high = zoom.get_ylim()
    assert low < 1.021 and 1.43 < high < 2, "the zoom holds both floors and the held-out loss"
    assert whole.get_ylim()[1] > 9.57, "the whole run starts from guessing"
    legend = " ".join(t.get_text() for t in figure.legends[0].get_texts())
    assert "held-out sentences" in legend and "the sentences by heart (1.021)" in legend
    assert "floor, held-out" in legend


def test_no_peeking_is_two_maps_white_where_nothing_moved():
    forward = np.triu(np.ones((4, 4))) * 0.1
    figure = plots.plot_no_peeking(forward, forward.T.copy())
    left, right = figure.axes[:2]
    shown = left.images[0].get_array()
    assert shown.mask[1, 0] and not shown.mask[0, 1], "0 is masked (white), the rest drawn"
    assert "forward" in left.get_title() and "backward" in right.get_title()


def test_relative_ranks_draw_one_point_per_query_and_model_and_chance():
    found = {model: [analysis.Neighbours(q, r, rank, [], 116)
                     for q, r, rank in (("banks", "bank", 1), ("bnak", "bank", 3))]
             for model in ("word biLM", "character biLM")}
    figure = plots.plot_relative_ranks(found, 58.5)
    ax = figure.axes[0]
    assert [len(c.get_offsets()) for c in ax.collections] == [2, 2]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["banks -> bank", "bnak -> bank"]
    assert any("chance: rank 58.5" == line.get_label() for line in ax.lines)


def test_no_figure_writes_text_under_8_points_at_the_notebooks_width(trained, comparison,
                                                                      baseline):
    task = analysis.sense_task(REFERENCE, trained.model, trained.word2idx)
    result = analysis.evaluate_task(REFERENCE, task, seed=0, epochs=2)
    halves = analysis.compare_halves(REFERENCE, trained.model, trained.word2idx)
    relatives = analysis.nearest_relatives(REFERENCE, trained.model, trained.word2idx)
    figures = {
        "loss curve": plots.plot_loss_curve([9.6, 2.0, 1.2, 1.1], [9.6, 2.1, 1.4, 1.4],
                                            {"a": 1.08, "b": 1.02}, 1.08, 9.57),
        "no peeking": plots.plot_no_peeking(np.triu(np.ones((11, 11))),
                                            np.tril(np.ones((11, 11)))),
        "context comparison": plots.plot_context_comparison(comparison, baseline),
        "halves": plots.plot_halves(halves, baseline),
        "sense PCA": plots.plot_sense_pca(REFERENCE, trained.model, trained.word2idx, "bank"),
        "layer weights": plots.plot_layer_weights([[result, result]]),
        "control": plots.plot_against_control([plots.ControlPanel(
            "t", "y", [0.0, 0.2, 0.3], [0.0, 0.1, 0.1], 0.0, "no gap")] * 4),
        "relative ranks": plots.plot_relative_ranks(
            {"word": relatives, "char": relatives}, 58.5),
    }
    for name, figure in figures.items():
        assert figure.get_figwidth() <= plots.NOTEBOOK_WIDTH_IN + 1e-9, (
            f"{name}: wider than a notebook shows it, so its text would shrink")
        assert plots.smallest_text(figure) >= 8, (
            f"{name}: text of {plots.smallest_text(figure):.1f} pt at the notebook's width")


def test_smallest_text_counts_the_shrinking_of_a_wide_figure():
    figure = Figure(figsize=(17, 4))
    figure.subplots().set_title("t", fontsize=10)
    assert plots.smallest_text(figure) == pytest.approx(5.0), "10 pt ticks, drawn at half size"


def test_legends_sit_off_the_data(comparison, baseline):
    figure = plots.plot_context_comparison(comparison, baseline)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)  # lays the legends out
    for ax in figure.axes:
        legend, data = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(
            renderer)
        assert legend.y1 <= data.y0, f"{ax.get_title()}: the legend overlaps the data"


def test_the_halves_share_one_legend_below_both_panels(trained, baseline):
    halves = analysis.compare_halves(REFERENCE, trained.model, trained.word2idx)
    figure = plots.plot_halves(halves, baseline)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    assert [ax.get_legend() for ax in figure.axes] == [None, None] and len(figure.legends) == 1
    legend = figure.legends[0].get_window_extent(renderer)
    assert all(legend.y1 <= ax.get_window_extent(renderer).y0 for ax in figure.axes), (
        "the legend sits below both panels, off their data")
