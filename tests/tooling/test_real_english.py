"""ELMo on real English: the WordNet data are what the extraction tool makes of WordNet; the
splits, priors, probe, bigram model and bootstrap read fairly; a small run of the pipeline
reads word sense from context; and the committed results, their tables and figures agree."""

import copy
import json
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from analyses import real_english, real_findings, real_readings, real_results
from course.long_command import INTERRUPTED
from course.registry import CACHE_ENV_VAR, REFERENCE_DIR, ROOT
from tests.tooling.conftest import interrupt_after
from tools import demo_real, reference, release, results, wordnet

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)


@pytest.fixture(scope="module")
def sections():
    return reference()


@pytest.mark.check_all  # only tools/wordnet.py, data/wordnet/ or WordNet itself can break it
def test_the_shipped_files_are_what_the_tool_makes_of_wordnet():
    if not wordnet.installed():
        pytest.skip(f"WordNet 3.0 is not installed at {wordnet.WORDNET_DIR} (apt-get install "
                    "wordnet-base, or make system-packages as root): the byte-for-byte check "
                    "of data/wordnet/ is skipped")
    assert wordnet.check() == [], "run `python -m tools.wordnet` and commit data/wordnet/"


def test_the_check_skips_with_a_clear_message_where_wordnet_is_absent(tmp_path, capsys):
    assert wordnet.main(["--check", "--wordnet", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert "not installed" in said and "check skipped" in said and "wordnet-base" in said
    assert wordnet.main(["--wordnet", str(tmp_path)]) == 1, "nothing to extract from"


def test_the_files_are_gzip_without_a_time_with_the_licence_beside_them():
    for name in ("glosses.tsv.gz", "examples.tsv.gz"):
        header = (wordnet.OUT / name).read_bytes()[:10]
        assert header[:2] == b"\x1f\x8b" and header[4:8] == b"\0\0\0\0", name
    assert wordnet.compress(b"same") == wordnet.compress(b"same")
    assert "Princeton University" in (wordnet.OUT / "LICENSE").read_text()


def test_a_gloss_splits_into_its_definition_and_its_examples():
    definition, examples = wordnet.parse_gloss(
        'sloping land (especially the slope beside a body of water); "they pulled the canoe '
        'up on the bank"; "he sat on the bank of the river"  ')
    assert definition == "sloping land (especially the slope beside a body of water)"
    assert examples == ("they pulled the canoe up on the bank", "he sat on the bank of the river")
    assert wordnet.parse_gloss('a word; "said" - Shakespeare')[1] == ("said",)
    assert wordnet.base_forms("watches", "v", {"v": {}}) >= {"watch", "watche"}
    assert "go" in wordnet.base_forms("went", "v", {"v": {"went": ("go",)}})


def test_every_example_names_its_word_where_tokenize_puts_it(sections):
    examples = real_english.read_examples()
    assert len(examples) > 40_000 and len(real_english.read_definitions()) == 117_659
    for example in examples:
        assert sections.corpus.tokenize(example.sentence)[example.position] == example.word
    pool = real_english.sense_pool(examples)
    assert all(len({e.synset for e in pool if (e.lemma, e.pos) == key}) >= 2
               for key in {(e.lemma, e.pos) for e in pool[:500]})


def test_batches_hold_every_sentence_once_and_sentences_of_about_one_length():
    sentences = [[0] * n for n in (3, 9, 4, 3, 8, 9, 4, 12, 3)]
    batches = real_english.buckets(sentences, 10, torch.Generator().manual_seed(0))
    assert sorted(i for batch in batches for i in batch) == list(range(len(sentences)))
    spans = sorted((min(len(sentences[i]) for i in b), max(len(sentences[i]) for i in b))
                   for b in batches)
    assert all(high <= low for (_, high), (low, _) in zip(spans, spans[1:], strict=False)), (
        f"each batch a run of the sentences sorted by length: {spans}")


def test_the_balanced_split_holds_out_one_example_of_each_synset_that_training_also_has():
    pool = real_english.sense_pool(real_english.read_examples(), 1_000)
    split = real_readings.balanced_split(pool, 0)
    task = real_readings.sense_task(pool, split)
    tested = [(pool[i].lemma, pool[i].pos, pool[i].synset) for i in task.test.tolist()]
    assert len(tested) == len(set(tested)), "one test example per synset"
    assert bool(task.answerable.all()), "every test synset has training examples"
    assert bool(((task.candidates >= 0).sum(dim=1) >= 2).all()), "two senses or more a lemma"
    assert not bool((split.train & split.test).any())
    priors = real_readings.sense_priors(task)
    assert float(priors["chance"].mean()) == pytest.approx(float(priors["most_frequent"].mean())), (
        "any prior that gives a lemma one sense is right once per lemma: chance")


def test_the_natural_split_counts_what_cannot_be_answered():
    pool = real_english.sense_pool(real_english.read_examples(), 1_000)
    task = real_readings.sense_task(pool, real_readings.natural_split(pool, 0))
    trained = {(pool[i].lemma, pool[i].pos, pool[i].synset) for i in task.train.tolist()}
    expected = [(pool[i].lemma, pool[i].pos, pool[i].synset) in trained
                for i in task.test.tolist()]
    assert task.answerable.tolist() == expected
    assert 0.2 < float(task.answerable.float().mean()) < 0.6


def _task(counts: list[list[int]], gold: list[int], first: list[bool]) -> real_readings.SenseTask:
    """A SenseTask of test examples whose candidates have these training counts (0: none)."""
    counts_ = torch.tensor(counts)
    candidates = torch.where(counts_ > 0, torch.arange(counts_.numel()).view(counts_.shape), -1)
    return real_readings.SenseTask(torch.tensor([0]), torch.tensor([0]),
                                   torch.arange(len(gold)), candidates, counts_,
                                   torch.tensor(gold), torch.tensor(first),
                                   candidates[:, 0] >= 0)


def test_the_frequency_prior_credits_tied_senses_as_a_guess_among_them():
    task = _task([[1, 1, 0], [3, 1, 1], [2, 2, 1], [0, 0, 0]], [1, 1, 2, -1],
                 [True, False, False, True])
    priors = real_readings.sense_priors(task)
    assert priors["most_frequent"].tolist() == [0.5, 0.0, 0.0, 1.0], (
        "a 1-1 tie is half right whichever WordNet lists first; an unseen lemma gets "
        "WordNet's first sense")
    assert priors["chance"].tolist() == pytest.approx([0.5, 1 / 3, 1 / 3, 1.0])
    assert priors["first_sense"].tolist() == [1.0, 0.0, 0.0, 1.0]


def test_the_nearest_sense_is_the_nearest_training_mean_and_ties_share_the_credit():
    vectors = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1], [0.1, 0.9], [0.5, 0.5]])
    task = real_readings.SenseTask(
        torch.tensor([0, 1]), torch.tensor([0, 1]), torch.tensor([2, 3, 4]),
        torch.tensor([[0, 1], [0, 1], [0, 1]]), torch.ones(3, 2, dtype=torch.long),
        torch.tensor([0, 0, 0]), torch.zeros(3, dtype=torch.bool), torch.ones(3, dtype=torch.bool))
    assert real_readings.nearest_sense(task, vectors).tolist() == [1.0, 0.0, 0.5], (
        "centred by the training mean, the last is as near one mean as the other")


def test_the_probe_chooses_its_penalty_without_the_fold_it_scores():
    """Relabelling the scored fold changes what the probe is scored on, never which penalty
    it picked for that fold."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(300, 16, generator=generator)
    labels = (x[:, :4] + 0.8 * torch.randn(300, 4, generator=generator)).argmax(dim=1)
    folds = torch.arange(300) % 3
    right, sweep, chosen = real_readings.probe_scores(x, labels, folds, 4)
    shuffled = labels.clone()
    shuffled[folds == 0] = labels[folds == 0].roll(1)
    _, _, again = real_readings.probe_scores(x, shuffled, folds, 4)
    assert again[0] == chosen[0]
    assert sweep.shape == (len(real_readings.PENALTIES), 300)
    index = real_readings.PENALTIES.index(chosen[0])
    assert torch.equal(right[folds == 0], sweep[index, folds == 0])
    assert float(right.float().mean()) > 0.5, "a learnable task is learnt"


def test_a_larger_penalty_gives_smaller_weights():
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(200, 8, generator=generator)
    labels = x[:, :3].argmax(dim=1)
    weight, _ = real_readings.logistic_fits(x, labels, 3, (1e-3, 1e-1, 1.0))
    norms = weight.pow(2).sum(dim=(1, 2)).tolist()
    assert norms[0] > norms[1] > norms[2] > 0


def test_the_masked_control_reads_the_target_as_unk(sections):
    scale = real_english.SCALES["check"]
    corpus = real_english.gloss_corpus(sections, scale)
    model = real_english.make_bilm(sections, corpus, scale, 0)
    pool = real_english.sense_pool(real_english.read_examples(), 1_000)[:40]
    masked = real_english.embed(sections, model, pool, corpus.word2idx, masked=True)
    plain = real_english.embed(sections, model, pool, corpus.word2idx)
    assert torch.allclose(masked[0], masked[0, :1].expand_as(masked[0])), (
        "layer 0 of <unk> is one vector, whatever the word")
    known = [i for i, e in enumerate(pool) if e.word in corpus.word2idx]
    assert known and not torch.allclose(masked[1, known], plain[1, known])
    unknown = [i for i, e in enumerate(pool) if e.word not in corpus.word2idx]
    assert unknown and torch.allclose(masked[:, unknown], plain[:, unknown])


def test_the_notebooks_playground_word_is_one_the_smallest_bilm_reads_and_has_examples_of(
        sections):
    """Notebook 09 reads its sentence with the check-scale biLM wherever no run of the
    pipeline is cached (the book, a fresh clone): its word must not be <unk> to it."""
    source = (ROOT / "notebooks" / "09_real_english.py").read_text()
    word = re.search(r'^WORD = "(\w+)"$', source, re.MULTILINE)[1]
    sentence = re.search(r'^SENTENCE = "([^"]+)"$', source, re.MULTILINE)[1]
    scale = real_english.SCALES["check"]
    assert word in sections.corpus.tokenize(sentence)
    assert word in real_english.gloss_corpus(sections, scale).word2idx
    senses = {e.synset for e in real_english.sense_pool(real_english.read_examples(),
                                                          scale.lemmas) if e.lemma == word}
    assert len(senses) >= 2, "examples of several senses to search"


def test_the_bigram_model_is_a_distribution_and_its_discounts_are_chen_and_goodmans():
    drawn = random.Random(4)  # a seed whose pairs and continuations are seen 1 to 4 times
    letters = "abcdefghijkl"
    sentences = [["<s>", *drawn.choices(letters, weights=[1 / n for n in range(1, 13)],
                                        k=drawn.randint(2, 6)), "</s>"] for _ in range(40)]
    words = ["<unk>", "</s>", *letters, "z"]
    bigram, discounts = real_english.kneser_ney_bigram(sentences, len(words))
    for previous in ("<s>", "a", "l", "z"):
        assert sum(bigram(previous, w) for w in words) == pytest.approx(1.0), previous
    assert bigram("a", "z") > 0, "an unseen word keeps some probability"
    n = [None, 1, 2, 3, 4]  # n1 .. n4
    y = n[1] / (n[1] + 2 * n[2])
    assert real_english.kneser_ney_discounts([1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 9]) == (
        pytest.approx(1 - 2 * y * n[2] / n[1]), pytest.approx(2 - 3 * y * n[3] / n[2]),
        pytest.approx(3 - 4 * y * n[4] / n[3]))
    assert len(discounts) == 3


def test_the_bootstrap_draws_seeds_then_examples():
    rng = np.random.default_rng(0)
    alike = [rng.integers(0, 2, (1, 400)).astype(float) for _ in range(5)]
    apart = [value * 0 + seed % 2 for seed, value in enumerate(alike)]  # seeds disagree
    within = real_findings.bootstrap(alike, 1000)
    between = real_findings.bootstrap(apart, 1000)
    assert np.ptp(np.percentile(between, [2.5, 97.5])) > 5 * np.ptp(
        np.percentile(within, [2.5, 97.5])), "seeds that disagree widen the interval"
    assert np.allclose(real_findings.bootstrap([np.ones((1, 7))] * 3, 50), 1.0)
    assert np.array_equal(real_findings.bootstrap(alike, 200), real_findings.bootstrap(alike, 200))
    mean = np.mean([a.mean() for a in alike])
    low, high = np.percentile(within, [2.5, 97.5])
    assert low < mean < high


def _interval(low: float, high: float) -> dict:
    return {"mean": (low + high) / 2, "low": low, "high": high, "seeds": []}


@pytest.mark.parametrize(("pretrained", "control", "kind", "verdict"), [
    ((0.01, 0.05), (0.01, 0.05), "prior", "the architecture"),
    ((0.01, 0.05), (-0.01, 0.02), "prior", "pre-training"),
    ((-0.05, -0.01), (-0.05, -0.01), "prior", "not at this scale"),
    ((-0.01, 0.03), (0.01, 0.05), "prior", "not at this scale"),
    ((-0.05, -0.01), (-0.06, -0.02), "layers", "the architecture"),
])
def test_a_verdict_is_what_the_intervals_resolve(pretrained, control, kind, verdict):
    part = _interval(pretrained[0] - control[1], pretrained[1] - control[0])
    if verdict == "pre-training":
        part = _interval(0.005, 0.04)
    assert real_findings.verdict(_interval(*pretrained), _interval(*control), part,
                                 kind) == verdict


def test_an_accuracy_s_verdict_is_pre_training_s_part():
    accuracy = _interval(0.6, 0.7)
    assert real_findings.verdict(accuracy, accuracy, _interval(0.01, 0.02),
                                 "accuracy") == "pre-training"
    assert real_findings.verdict(accuracy, accuracy, _interval(-0.01, 0.02),
                                 "accuracy") == "not at this scale"


def test_the_findings_pair_the_readings_example_by_example():
    rng = np.random.default_rng(1)
    seeds = []
    for _ in range(3):
        base = rng.integers(0, 2, 300).astype(float)
        seeds.append({"balanced": {"chance": np.full(300, 0.3),
                                   **{f"word/{k}": base for k in range(3)},
                                   **{f"untrained/{k}": base for k in range(3)}}})
    found = real_findings.findings(seeds)
    layer = next(f for f in found["findings"] if f["name"] == "layer 2")
    assert layer["part"]["low"] == layer["part"]["high"] == 0.0, (
        "equal scores on every example: a difference of exactly 0")
    assert layer["verdict"] == "not at this scale"
    assert set(found["readings"]["balanced"]) == {"chance", *seeds[0]["balanced"]}


def test_a_small_run_reads_sense_from_context_above_layer_0_and_chance(sections, monkeypatch):
    """The check scale: a few thousand tokens, one seed. What must hold even so: on the
    balanced split, the contextual layers tell a lemma's synsets apart better than layer 0
    and than chance."""
    monkeypatch.setenv("ELMO_CACHE_DIR", "")
    scale = real_english.SCALES["check"]
    corpus = real_english.gloss_corpus(sections, scale)
    model, record = real_english.pretrained_real(sections, corpus, scale, 0,
                                                 torch.device("cpu"), log=lambda _: None)
    assert record["history"][-1] < record["history"][0], "the loss falls"
    pool = real_english.sense_pool(real_english.read_examples(), scale.lemmas)
    layers = real_english.embed(sections, model, pool, corpus.word2idx)
    task = real_readings.sense_task(pool, real_readings.balanced_split(pool, 0))
    accuracy = [float(real_readings.nearest_sense(task, layers[k]).mean()) for k in range(3)]
    chance = float(real_readings.sense_priors(task)["chance"].mean())
    for layer in (1, 2):
        assert accuracy[layer] > max(accuracy[0], chance), (
            f"layer {layer} {accuracy[layer]:.3f} against layer 0 {accuracy[0]:.3f} and "
            f"chance {chance:.3f}")


def test_the_committed_results_are_valid_and_say_what_made_them():
    committed = real_results.load()
    assert real_results.validate(committed) == []
    assert committed["run"]["commit"] and len(committed["run"]["code"]) == 16
    assert committed["run"]["cpu_seconds"] > 0 and "mean" in committed["run"]["load"]
    primary = {(f["test"], f["name"], f["control_model"]) for f in committed["findings"]
               if f["primary"]}
    expected = {(c.test, c.name, c.a_control.split("/")[0])
                for c in real_findings.COMPARISONS if c.primary}
    assert primary == expected, "every comparison named in advance, and no other, is primary"
    text = "".join(path.read_text() for path in results.TABLE_FILES)
    for name in real_results.TABLES:
        assert f"<!-- table: {name} -->" in text, f"{name}: in no Markdown file"


def test_stale_results_warn_and_current_ones_do_not(capsys):
    committed = real_results.load()
    assert demo_real.stale_warning(committed, committed["run"]["code"]) is None
    warning = demo_real.stale_warning(committed, "0" * 16)
    assert warning.startswith("WARNING") and committed["run"]["code"] in warning
    assert demo_real.main(["--stale"]) == 0, "a warning, never a failure"
    assert "results-real.json" in capsys.readouterr().out


def test_a_changed_real_number_makes_the_tables_stale(monkeypatch, tmp_path):
    changed = copy.deepcopy(real_results.load())
    changed["readings"]["balanced"]["word/1"]["mean"] += 0.5
    next(f for f in changed["findings"] if f["test"] == "balanced"
         and f["name"] == "layer 2")["part"]["mean"] += 0.5
    path = tmp_path / "results-real.json"
    path.write_text(json.dumps(changed))
    monkeypatch.setattr(real_results, "REFERENCE_RESULTS", path)
    assert results.stale_tables(results.load()) == ["README.md", "docs/analysis.md"]


def test_a_result_without_the_schema_is_refused():
    broken = copy.deepcopy(real_results.load())
    del broken["readings"]["pos"]["word/1"]
    assert any("readings.pos.word/1" in p for p in real_results.validate(broken))
    assert real_results.validate({"run": {}}) != []


def test_the_figures_and_the_nearest_examples_draw_from_the_results(tmp_path):
    committed = real_results.load()
    for name, plot in (("layers", real_results.plot_layers),
                       ("findings", real_results.plot_findings),
                       *([("rare", real_results.plot_rare)]
                         if real_results.has_characters(committed) else [])):
        plot(committed, tmp_path / f"{name}.png")
        assert (tmp_path / f"{name}.png").stat().st_size > 0
    assert "layer 2:" in real_results.nearest_text(committed)


def test_the_full_scale_cost_is_extrapolated_from_its_measured_fraction():
    speed = {"tokens": 1_000_000, "trained": 10_000, "cpu_seconds": 5.0, "epochs": 6}
    cost = real_english.full_scale_cost([speed, {**speed, "cpu_seconds": 10.0}], 5)
    assert cost["cpu_hours"] == pytest.approx(5 * (6 * 100 * 5.0 + 6 * 100 * 10.0) / 3600)


def test_the_handout_copy_keeps_the_numbers_and_drops_the_command():
    copied = json.loads(release.real_english_numbers())
    assert "command" not in copied["run"]
    assert copied["findings"] == real_results.load()["findings"]


def test_a_learners_run_is_set_beside_the_references():
    committed = real_results.load()
    table = real_results.comparison_table(committed, committed)
    assert "word sense, balanced split: layer 2" in table and "your ELMo" in table


def test_the_biLM_and_its_baselines_are_read_in_one_unit():
    """Perplexity, the biLM's and the n-gram models' alike, in the table and in the
    training log; never a summed loss in nats beside a perplexity."""
    committed = real_results.load()
    table = real_results.comparison_table(committed, committed)
    lines = [line for line in table.splitlines() if "held-out" in line]
    assert len(lines) == 4 and all("perplexity" in line for line in lines), table
    assert "unigram" in table and "bigram" in table
    assert f"{committed['ngram']['bigram']:.1f}" in table


def test_the_training_log_speaks_perplexity(sections):
    scale = real_english.SCALES["check"]
    corpus = real_english.gloss_corpus(sections, scale)
    model = real_english.make_bilm(sections, corpus, scale, 0)
    said = []
    real_english.pretrain(sections, model, corpus, scale, 0, 0.2, torch.device("cpu"),
                          log=said.append, log_every=0)
    assert said and all("perplexity forward" in line and "loss" not in line for line in said)


def test_make_help_states_the_time_the_references_run_took():
    """`make help`'s time for make replicate-real is the reference's CPU time over the two
    processes it runs in, what the command itself says to expect."""
    mk = (ROOT / "course" / "learner.mk").read_text()
    stated = re.search(r"replicate-real:.*## .*\(~(\d+) min on 2 idle cores", mk)
    assert stated, "make help states no time for make replicate-real"
    expected = real_english.expected_time(2)
    assert f"about {stated.group(1)} min on 2 idle cores" in expected, expected


def test_no_table_holds_a_bare_tag_that_a_renderer_would_hide():
    reference = real_results.load()
    for name, table in real_results.TABLES.items():
        text = re.sub(r"`[^`]*`", "", table(reference))
        assert not re.search(r"<[a-z]", text), f"{name}: {text[:300]}"


def test_replicate_real_runs_through_in_two_processes(tmp_path):
    """The learner's command as make replicate-real runs it (forked processes, a cache), at
    the check scale: it ends with its results and the comparison with the reference's."""
    env = {**os.environ, CACHE_ENV_VAR: str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "analyses.real_english", "--impl", str(REFERENCE_DIR),
         "--scale", "check", "--seeds", "2", "--jobs", "2", "--out", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    found = real_results.load(tmp_path / "out" / "results.json")
    assert found["run"]["jobs"] == 2 and found["findings"], found["run"]


def test_replicate_real_shows_progress_at_once_and_stops_cleanly_on_ctrl_c(tmp_path):
    env = {**os.environ, CACHE_ENV_VAR: str(tmp_path / "cache")}
    status, out, err, before = interrupt_after(
        [sys.executable, "-m", "analyses.real_english", "--impl", str(REFERENCE_DIR),
         "--scale", "check", "--seeds", "2", "--jobs", "2", "--out", str(tmp_path / "out")],
        first="pre-training", env=env)
    assert before[0].startswith("make replicate-real:") and "Ctrl-C" in before[0], before
    assert status == INTERRUPTED, (status, out, err)
    assert "make replicate-real stopped (Ctrl-C)" in out and "Traceback" not in err + out, err
