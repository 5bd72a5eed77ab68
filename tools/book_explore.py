"""The course book's Explore page: one word's occurrences, layer by layer, for the pre-trained
biLM and its control side by side.

For a chosen word, seed and layer, two panels on one scale: the pre-trained biLM's vectors of
every occurrence of the word (its 24 training sentences and 8 held-out ones) on their first
two principal components, and the same for the untrained biLM of the same shape and seed.
Beneath them, in words, what tells the two apart: the sense gap (same-sense minus
different-sense cosine) of each, and what pre-training adds. A split of the colours is not
the measure: the control's points group too, by the phrases their sentences share
(notebook 06). At layer 0 every occurrence is one vector, drawn as one point that says so.

The numbers are computed when the book is built (`explore_data`), the picture is drawn by
the page itself: nothing is fetched.
"""

from __future__ import annotations

import json

SEEDS = (0, 1, 2)  # the seeds of the biLMs shown
MODELS = ("pre-trained", "untrained")

PAGE = """\
# Explore: one word, layer by layer

Choose a word, a seed and a layer. The left panel shows the **pre-trained** biLM's vector of
the word in each of its sentences, the right one the **untrained** biLM of the same shape and
seed, the control: each on its own first two principal components, both on one scale, so
that a distance means the same on either side. Colour is the word's sense; a hollow point is
a held-out sentence; hover over a point for its sentence.

What separates the two biLMs is written under the panels: the **sense gap**, the mean cosine
of two occurrences of the same sense minus that of two of different senses, for each, and
what pre-training adds to it. Do not read the colours' split on two components as the
measure: the untrained biLM's points group too, by the phrases their sentences share, and a
sense can look split there without its gap (notebook 06 measures both over every pair, and
over ten seeds). At layer 0, the word without its context, every occurrence is one vector.

```{{raw}} html
<div id="explore" style="font-size: 0.95rem">
  <label>word <select id="ex-word"></select></label>
  <label>seed <select id="ex-seed"></select></label>
  <label>layer <input type="range" id="ex-layer" min="0" max="2" step="1" value="1">
    <span id="ex-layer-value"></span></label>
  <svg id="ex-plot" viewBox="0 0 960 500" width="100%" role="img"
       aria-label="the word's occurrences, pre-trained and untrained"></svg>
  <p id="ex-caption"></p>
</div>
<script>
const EXPLORE = {data};
(function () {{
  const $ = (id) => document.getElementById(id);
  const colours = ["#1f77b4", "#ff7f0e"];
  const size = 380, top = 40, lefts = [60, 540];  // two square panels, one scale
  function options(select, values) {{
    select.innerHTML = values.map((v) => `<option value="${{v}}">${{v}}</option>`).join("");
  }}
  options($("ex-word"), Object.keys(EXPLORE.views));
  options($("ex-seed"), EXPLORE.seeds);
  function ticks(range) {{  // about five round values in [-range, range]
    const step = Math.pow(10, Math.floor(Math.log10(range / 2)));
    const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => range / s <= 3);
    const found = [];
    for (let t = -Math.floor(range / nice) * nice; t <= range + 1e-12; t += nice) {{
      found.push(+t.toFixed(6));
    }}
    return found;
  }}
  function panel(left, title, view, range, senses, sentences) {{
    const at = (v) => size / 2 + v / range * (size / 2);
    let svg = `<text x="${{left + size / 2}}" y="${{top - 12}}" text-anchor="middle" ` +
      `font-size="15" fill="#222">${{title}}</text>` +
      `<rect x="${{left}}" y="${{top}}" width="${{size}}" height="${{size}}" fill="none" ` +
      `stroke="#999"/>`;
    if (range < 1e-9) {{  // layer 0: one vector in every sentence
      const cx = left + size / 2, cy = top + size / 2;
      const half = (sweep) => `M ${{cx}} ${{cy - 9}} A 9 9 0 0 ${{sweep}} ${{cx}} ${{cy + 9}} Z`;
      svg += `<path class="ex-point" d="${{half(0)}}" fill="${{colours[0]}}"/>` +
        `<path d="${{half(1)}}" fill="${{colours[1]}}"><title>every occurrence</title></path>` +
        `<text x="${{cx}}" y="${{cy + 30}}" text-anchor="middle" font-size="14" fill="#222">` +
        `all ${{view.points.length}} occurrences: one point</text>`;
      return svg;
    }}
    ticks(range).forEach((t) => {{
      const x = left + at(t), y = top + size - at(t);
      svg += `<line x1="${{x}}" y1="${{top + size}}" x2="${{x}}" y2="${{top + size + 5}}" ` +
        `stroke="#999"/><text x="${{x}}" y="${{top + size + 18}}" text-anchor="middle" ` +
        `font-size="12" fill="#444">${{t}}</text>` +
        `<line x1="${{left - 5}}" y1="${{y}}" x2="${{left}}" y2="${{y}}" stroke="#999"/>` +
        `<text x="${{left - 8}}" y="${{y + 4}}" text-anchor="end" font-size="12" ` +
        `fill="#444">${{t}}</text>`;
    }});
    svg += `<text x="${{left + size / 2}}" y="${{top + size + 36}}" text-anchor="middle" ` +
      `font-size="13" fill="#222">first principal component ` +
      `(${{Math.round(view.share * 100)}}% of the spread)</text>` +
      `<text transform="translate(${{left - 42}}, ${{top + size / 2}}) rotate(-90)" ` +
      `text-anchor="middle" font-size="13" fill="#222">second principal component</text>`;
    view.points.forEach((p) => {{
      const colour = colours[p[2]];
      svg += `<circle class="ex-point" cx="${{left + at(p[0])}}" cy="${{top + size - at(p[1])}}" ` +
        `r="6" stroke="${{colour}}" stroke-width="2" fill="${{p[3] ? "white" : colour}}" ` +
        `fill-opacity="${{p[3] ? 1 : 0.75}}"><title>${{sentences[p[4]]}} ` +
        `(${{senses[p[2]]}}${{p[3] ? ", held out" : ""}})</title></circle>`;
    }});
    return svg;
  }}
  function draw() {{
    const word = $("ex-word").value, seed = $("ex-seed").value, layer = +$("ex-layer").value;
    $("ex-layer-value").textContent = layer;
    const views = EXPLORE.views[word][seed][layer];
    const senses = EXPLORE.senses[word], sentences = EXPLORE.sentences[word];
    const range = 1.08 * Math.max(...EXPLORE.models.flatMap((m) =>
      views[m].points.flatMap((p) => [Math.abs(p[0]), Math.abs(p[1])])));
    let svg = "";
    EXPLORE.models.forEach((model, i) => {{
      const title = model === "untrained" ? "untrained biLM (the control)" : "pre-trained biLM";
      svg += panel(lefts[i], title, views[model], range, senses, sentences);
    }});
    senses.forEach((sense, i) => {{
      svg += `<circle cx="${{70 + 170 * i}}" cy="490" r="6" fill="${{colours[i]}}"/>` +
        `<text x="${{82 + 170 * i}}" y="495" fill="#222" font-size="14">${{sense}}</text>`;
    }});
    svg += '<circle cx="420" cy="490" r="6" fill="white" stroke="#555" stroke-width="2"/>' +
      '<text x="432" y="495" font-size="14" fill="#222">held out</text>';
    $("ex-plot").innerHTML = svg;
    $("ex-caption").textContent = `'${{word}}', seed ${{seed}}, layer ${{layer}}: ` +
      views.caption;
  }}
  ["ex-word", "ex-seed", "ex-layer"].forEach((id) => $(id).addEventListener("input", draw));
  draw();
}})();
</script>
```
"""


def caption(layer: int, gaps: dict[str, float], count: int) -> str:
    """What separates the two biLMs at one view, in words: each one's sense gap and what
    pre-training adds; at layer 0, that every occurrence is one vector."""
    if layer == 0:
        return (f"the word without its context. All {count} occurrences are one vector in "
                "both biLMs, so no layer-0 reading can tell the senses apart: the sense gap "
                "is 0 for both.")
    trained, untrained = gaps["pre-trained"], gaps["untrained"]
    return (f"the sense gap over the word's {count} occurrences is {trained:.3f} for the "
            f"pre-trained biLM against {untrained:.3f} for its untrained control: "
            f"pre-training adds {trained - untrained:+.3f}, the step from the right panel's "
            "reading to the left one's.")


def explore_data(made_up: bool = False) -> dict:
    """The page's numbers: per word, seed (as text), layer: per biLM the points [x, y, sense
    index, held out (0/1), sentence index] on its first two principal components, the share
    of the spread on the first, and the caption; the senses and sentences of each word.
    With `made_up`, one word of three made-up points and no biLM, for the check's book."""
    if made_up:
        views = {}
        for layer in range(3):
            spread = 0.0 if layer == 0 else 0.2 * layer
            points = [[0.0, spread, 0, 0, 0], [spread, -spread, 1, 1, 1], [-spread, 0.0, 0, 0, 2]]
            gaps = {"pre-trained": 0.1 * layer, "untrained": 0.02 * layer}
            views[layer] = {**{m: {"points": points, "share": 0.6} for m in MODELS},
                            "caption": caption(layer, gaps, 3)}
        return {"models": list(MODELS), "seeds": ["0"], "senses": {"bank": ["finance", "river"]},
                "sentences": {"bank": ["made up a", "made up b", "made up c"]},
                "views": {"bank": {"0": [views[k] for k in range(3)]}}}
    import torch

    from analyses import analysis, experiments
    from course.corpus import HELDOUT_LABELS, SENSE_LABELS
    from course.pretrained import pretrained
    from tools import reference

    sections = reference()
    labels = [*SENSE_LABELS, *HELDOUT_LABELS]
    held_out = {sentence for sentence, _, _ in HELDOUT_LABELS}
    words = list(dict.fromkeys(word for _, word, _ in labels))
    chosen = {w: [label for label in labels if label[1] == w] for w in words}
    senses = {w: list(dict.fromkeys(sense for _, _, sense in chosen[w])) for w in words}
    word2idx, _ = experiments.vocabulary(sections)
    views: dict = {w: {} for w in words}
    for seed in SEEDS:
        models = {"pre-trained": (pretrained(sections.package).model if seed == 0 else
                                  experiments.pretrain(sections, seed, word2idx)[0]).eval(),
                  "untrained": experiments.untrained_like(sections, seed).model}
        for word in words:
            sense_of = [senses[word].index(sense) for _, _, sense in chosen[word]]
            same = torch.tensor([[a == b for b in sense_of] for a in sense_of])
            different_pair = ~same
            same_pair = same & ~torch.eye(len(sense_of), dtype=torch.bool)
            per_layer: list[dict] = [{} for _ in range(3)]
            gaps: list[dict] = [{} for _ in range(3)]
            for name, model in models.items():
                vectors = analysis.target_vectors(sections, model, word2idx, chosen[word])
                for layer, points in enumerate(vectors):  # (N, D), of unit length
                    centred = points - points.mean(dim=0)
                    _, singular, directions = torch.linalg.svd(centred, full_matrices=False)
                    xy = (centred @ directions[:2].T).tolist()
                    cosines = points @ points.T
                    gaps[layer][name] = float(cosines[same_pair].mean()
                                              - cosines[different_pair].mean())
                    per_layer[layer][name] = {
                        "share": round(float((singular[0] ** 2 / (singular ** 2).sum())
                                             .nan_to_num()), 3),
                        "points": [[round(x, 4), round(y, 4), s, int(sentence in held_out), i]
                                   for i, ((x, y), s, (sentence, _, _)) in enumerate(
                                       zip(xy, sense_of, chosen[word], strict=True))]}
            for layer in range(3):
                per_layer[layer]["caption"] = caption(layer, gaps[layer], len(sense_of))
            views[word][str(seed)] = per_layer
    return {"models": list(MODELS), "seeds": [str(s) for s in SEEDS], "senses": senses,
            "sentences": {w: [s for s, _, _ in chosen[w]] for w in words}, "views": views}


def page(data: dict) -> str:
    """The page's MyST source, its numbers inside."""
    return PAGE.format(data=json.dumps(data, separators=(",", ":")))
