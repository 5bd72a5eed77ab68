"""ELMo on real English: the WordNet data are what the extraction tool makes of WordNet, a
small run of the pipeline reads word sense from context, and the committed results, their
tables and figures agree."""

import copy
import json

import pytest
import torch

from course import real_english, real_results
from tools import reference, release, results, wordnet


@pytest.fixture(scope="module")
def sections():
    return reference()


@pytest.fixture
def one_thread():
    """Torch on one thread, as the course runs it: on two shared cores a second thread's
    synchronisation costs more than it saves."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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


def test_a_small_run_reads_sense_from_context_above_layer_0_and_chance(sections, one_thread,
                                                                       monkeypatch):
    """The check scale: a few thousand tokens, one seed. What must hold even so: the
    contextual layers tell a lemma's synsets apart better than layer 0 and than chance."""
    monkeypatch.setenv("ELMO_CACHE_DIR", "")
    scale = real_english.SCALES["check"]
    corpus = real_english.gloss_corpus(sections, scale)
    model, record = real_english.pretrained_real(sections, corpus, scale, 0,
                                                 torch.device("cpu"), log=lambda _: None)
    assert record["history"][-1] < record["history"][0], "the loss falls"
    pool = real_english.sense_pool(real_english.read_examples(), scale.lemmas)
    layers = real_english.embed(sections, model, pool, corpus.word2idx)
    split = real_english.sense_split(pool, 0)
    task = real_english.sense_task(pool, split, "synset")
    accuracy = [real_english.nearest_sense(task, layers[k]) for k in range(3)]
    chance = real_english.sense_baselines(task)["chance"]
    for layer in (1, 2):
        assert accuracy[layer] > max(accuracy[0], chance), (
            f"layer {layer} {accuracy[layer]:.3f} against layer 0 {accuracy[0]:.3f} and "
            f"chance {chance:.3f}")


def test_the_committed_results_are_valid_and_their_tables_are_in_the_docs():
    committed = real_results.load()
    assert real_results.validate(committed) == []
    text = "".join(path.read_text() for path in results.TABLE_FILES)
    for name in real_results.TABLES:
        assert f"<!-- table: {name} -->" in text, f"{name}: in no Markdown file"
    for name, held, needed in real_results.targets(committed):
        assert held.shape == (len(committed["seeds"]),) and 0 < needed <= len(held), name


def test_a_changed_real_number_makes_the_tables_stale(monkeypatch, tmp_path):
    changed = copy.deepcopy(real_results.load())
    changed["runs"][0]["sense"]["word"]["synset"][1] += 0.5
    path = tmp_path / "results-real.json"
    path.write_text(json.dumps(changed))
    monkeypatch.setattr(real_results, "REFERENCE_RESULTS", path)
    assert results.stale_tables(results.load()) == ["README.md", "docs/analysis.md"]


def test_a_result_without_the_schema_is_refused():
    broken = copy.deepcopy(real_results.load())
    broken["runs"][0]["sense"]["word"]["synset"].pop()
    assert any("one accuracy a layer" in p for p in real_results.validate(broken))
    assert real_results.validate({"run": {}}) != []


def test_the_figures_and_the_nearest_examples_draw_from_the_results(tmp_path):
    committed = real_results.load()
    real_results.plot_layers(committed, tmp_path / "layers.png")
    assert (tmp_path / "layers.png").stat().st_size > 0
    if real_results.has_characters(committed):
        real_results.plot_rare(committed, tmp_path / "rare.png")
        assert (tmp_path / "rare.png").stat().st_size > 0
    assert "layer 2:" in real_results.nearest_text(committed)


def test_the_handout_copy_keeps_the_numbers_and_drops_the_command():
    copied = json.loads(release.real_english_numbers())
    assert "command" not in copied["run"]
    assert copied["runs"] == real_results.load()["runs"]
