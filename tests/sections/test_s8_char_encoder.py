"""Section 8 (bonus): the character mapper, the character CNN's max-pool, the highway layers,
and the biLM that reads characters: a layer 0 for any word, everything downstream as before.

A property of what the encoder or the character biLM computes (padding changes nothing, no
state kept, ...) holds as well of a token layer that gives every word one vector, or of
layers that read each word alone, which is no ELMo: each test of one judges it only of an
encoder that reads the characters (`assert_encodes_the_characters`) and a biLM that reads
the sentence (`reading.assert_reads_the_sentence`).

Each test is an act, which runs the section's code and returns what it computed as data,
and a judge, which checks that data alone (`judged.py`); the judges take the character
vocabulary's given constants from `course.characters`, never from the section's module.
"""

import pytest
import torch
from hypothesis import example
from hypothesis import strategies as st
from torch.nn import functional as F

from course import characters
from course.corpus import CORPUS
from course.diagnose import assert_close

from .devices import mixed_devices
from .judged import judged
from .reading import assert_reads_the_sentence, sentence_reading
from .strategies import any_words, id_batches, id_sequences, letter_words

TOL = dict(atol=1e-5, rtol=1e-4)
# A character biLM small enough for property tests: what they check holds at any size.
SMALL = dict(hidden_dim=16, char_dim=8, filters=((1, 4), (2, 4), (3, 8)), highway_layers=1)
MARKERS = ("<s>", "</s>")
ENCODED = ["bank", "river", "a"]  # what `assert_encodes_the_characters` reads


def close(a, b):
    return a.shape == b.shape and torch.allclose(a, b, **TOL)


def characters_reading(char_encoder, encoder):
    """The encoder's vectors of 'bank', 'river' and 'a' (the act's half of
    `assert_encodes_the_characters`)."""
    with torch.no_grad():
        return encoder(char_encoder.words_to_chars(ENCODED))


def assert_encodes_the_characters(vectors):
    """Three words of other characters, 'bank', 'river' and 'a', got three vectors
    (`characters_reading`)."""
    words = ENCODED
    alike = [(words[i], words[j]) for i, j in ((0, 1), (0, 2), (1, 2))
             if close(vectors[i], vectors[j])]
    assert not alike, (
        f"{' and '.join(map(repr, alike[0]))} got one vector from the encoder, though their "
        "characters differ. What this test checks would hold of an encoder that reads nothing "
        "of the characters, which is no character CNN; it counts for one whose vector of a "
        "word comes from that word's characters")


@pytest.fixture(scope="module")
def vocabulary(corpus):
    """idx2word of the course's corpus: the words a CharBiLM spells out."""
    return corpus.build_vocab(corpus.CORPUS)[1]


@pytest.fixture(scope="module")
def small(setup, char_encoder, vocabulary):
    """A small CharBiLM over the corpus's vocabulary, in eval mode."""
    setup.set_seed(0)
    return char_encoder.CharBiLM(vocabulary, **SMALL).eval()


@pytest.fixture(scope="module")
def encoder(setup, char_encoder):
    """A CharEncoder of the default character sizes (16-d characters, widths 1-7)."""
    setup.set_seed(0)
    return char_encoder.CharEncoder(8).eval()


# --- the character mapper ----------------------------------------------------------------

@example(word="naïve", max_chars=16)
@example(word="internationalisation", max_chars=16)
@judged(word=any_words, max_chars=st.integers(3, 20))
def test_a_word_is_bow_its_bytes_eow_then_padding(char_encoder, word, max_chars):
    """[BEGIN_OF_WORD, FIRST_BYTE + each UTF-8 byte (the first max_chars - 2), END_OF_WORD,
    CHAR_PAD ...], max_chars ids in all."""
    if word in MARKERS:
        return None
    ids = char_encoder.char_ids(word, max_chars)
    return {"ids": ids if isinstance(ids, list) else None, "shown": repr(ids)}


@test_a_word_is_bow_its_bytes_eow_then_padding.judge
def _(out, word, max_chars):
    m = characters
    if word in MARKERS:
        return
    ids = out["ids"]
    kept = [m.FIRST_BYTE + b for b in word.encode("utf-8")][: max_chars - 2]
    where = f"char_ids({word!r}, max_chars={max_chars})"
    assert isinstance(ids, list) and len(ids) == max_chars, (
        f"{where} should give a list of max_chars = {max_chars} ids, got {out['shown']}")
    assert ids[0] == m.BEGIN_OF_WORD and ids[len(kept) + 1] == m.END_OF_WORD, (
        f"{where}: a word starts with BEGIN_OF_WORD ({m.BEGIN_OF_WORD}) and its (cut) bytes "
        f"end with END_OF_WORD ({m.END_OF_WORD}), got {ids}")
    assert ids[1 : len(kept) + 1] == kept, (
        f"{where}: between BOW and EOW come the word's UTF-8 bytes, byte b as FIRST_BYTE + b "
        f"(a non-ASCII letter is two or more bytes), the first max_chars - 2 = "
        f"{max_chars - 2} of them: expected {kept}, got {ids[1:len(kept) + 1]}")
    assert all(i == m.CHAR_PAD for i in ids[len(kept) + 2 :]), (
        f"{where}: after EOW comes CHAR_PAD ({m.CHAR_PAD}) up to max_chars, got {ids}")


@judged()
def test_the_sentence_boundaries_are_one_marker_each(char_encoder):
    """<s> and </s> are BOW, their marker, EOW; <unk> and <pad> are spelled out."""
    return {token: char_encoder.char_ids(token) for token in (*MARKERS, "<unk>", "<pad>")}


@test_the_sentence_boundaries_are_one_marker_each.judge
def _(out):
    m = characters
    for token, marker in zip(MARKERS, (m.BEGIN_OF_SENTENCE, m.END_OF_SENTENCE), strict=True):
        expected = [m.BEGIN_OF_WORD, marker, m.END_OF_WORD] + [m.CHAR_PAD] * (m.MAX_CHARS - 3)
        assert out[token] == expected, (
            f"char_ids({token!r}) should be [BOW, its marker {marker}, EOW] then padding: "
            f"expected {expected}, got {out[token]}")
    for token in ("<unk>", "<pad>"):
        spelled = [m.FIRST_BYTE + b for b in token.encode()]
        assert out[token][1 : 1 + len(spelled)] == spelled, (
            f"char_ids({token!r}): every word but <s> and </s> is spelled out as it is written")


# --- the highway layers ------------------------------------------------------------------

DIM = 6


def highway_with_gate_bias(char_encoder, bias, num_layers=2):
    """A Highway whose gates' biases are all `bias`."""
    torch.manual_seed(0)
    highway = char_encoder.Highway(DIM, num_layers)
    with torch.no_grad():
        for layer in highway.layers:
            layer.bias[DIM:] = bias
    return highway


def inputs():
    return torch.randn(5, DIM, generator=torch.Generator().manual_seed(1))


@judged()
def test_a_highway_layer_is_one_linear_of_twice_the_width(char_encoder):
    """Highway(6, 3).layers: 3 registered nn.Linear(6, 12)."""
    highway = char_encoder.Highway(DIM, 3)
    shapes = [(layer.in_features, layer.out_features) for layer in highway.layers]
    registered = {id(p) for p in highway.parameters()}
    return {"shapes": shapes,
            "registered": [id(layer.weight) in registered for layer in highway.layers],
            "default": len(char_encoder.Highway(DIM).layers)}


@test_a_highway_layer_is_one_linear_of_twice_the_width.judge
def _(out):
    shapes = out["shapes"]
    assert shapes == [(DIM, 2 * DIM)] * 3, (
        f"Highway({DIM}, num_layers=3).layers should be 3 nn.Linear({DIM}, {2 * DIM}), one per "
        f"layer giving f and the gate's g together; found (in, out) = {shapes}")
    assert all(out["registered"]), (
        "the highway's layers are not among its parameters(): keep them in an nn.ModuleList")
    default = out["default"]
    assert default == 2, f"Highway({DIM}) should have num_layers = 2 by default, found {default}"


@judged()
def test_the_gate_bias_starts_at_one(char_encoder):
    """In each layer, bias[dim:] (the gate's half) is 1; the transform's half is not."""
    return [(layer.bias[DIM:].detach(), layer.bias[:DIM].detach())
            for layer in char_encoder.Highway(DIM, 2).layers]


@test_the_gate_bias_starts_at_one.judge
def _(out):
    for number, (gate, transform) in enumerate(out):
        assert torch.equal(gate, torch.ones(DIM)), (
            f"layer {number}: the gate's bias, bias[{DIM}:], should start at 1 (AllenNLP's "
            f"init: a new layer mostly carries its input), got {gate.tolist()}")
        assert not torch.equal(transform, torch.ones(DIM)), (
            f"layer {number}: only the gate's half of the bias starts at 1; bias[:{DIM}] "
            f"belongs to f, the transform, and keeps nn.Linear's initialisation")


@judged()
def test_a_gate_wide_open_carries_the_input(char_encoder):
    """With the gates' bias at +40 (t = 1), two highway layers give their input back."""
    highway, x = highway_with_gate_bias(char_encoder, 40.0), inputs()
    return highway(x)


@test_a_gate_wide_open_carries_the_input.judge
def _(y):
    x = inputs()
    assert close(y, x), (
        "with the gate's bias at +40, t = sigmoid(g) = 1 and y = t * x + (1 - t) * relu(f) "
        "must be x itself: the gate says how much of the input to carry")


@judged()
def test_a_gate_shut_transforms_through_a_relu(char_encoder):
    """With the gates' bias at -40 (t = 0), y = relu(f2(relu(f1(x)))): layer after layer."""
    highway, x = highway_with_gate_bias(char_encoder, -40.0), inputs()
    transforms = [(layer.weight[:DIM].detach(), layer.bias[:DIM].detach())
                  for layer in highway.layers]
    return {"transforms": transforms, "y": highway(x)}


@test_a_gate_shut_transforms_through_a_relu.judge
def _(out):
    expected = inputs()
    for weight, bias in out["transforms"]:
        expected = F.relu(expected @ weight.T + bias)
    y = out["y"]
    assert close(y, expected), (
        "with the gate's bias at -40, t = 0 and each layer gives relu(f), f being the first "
        "half of its nn.Linear's outputs; the second layer reads the first layer's output")


@judged()
def test_each_highway_layer_has_weights_of_its_own(char_encoder):
    """Layer 0's gate set wide open (+40: it carries its input), then layer 1's shut (-40:
    it transforms): y = relu(f1(x)), layer 1's transform alone, and layer 0 still open."""
    torch.manual_seed(0)
    highway, x = char_encoder.Highway(DIM, 2), inputs()
    first, second = highway.layers
    with torch.no_grad():
        first.bias[DIM:] = 40.0
        second.bias[DIM:] = -40.0
    return {"opened": float(first.bias[DIM:].detach().min()),
            "weight": second.weight[:DIM].detach(), "bias": second.bias[:DIM].detach(),
            "y": highway(x)}


@test_each_highway_layer_has_weights_of_its_own.judge
def _(out):
    x, opened = inputs(), out["opened"]
    expected = F.relu(x @ out["weight"].T + out["bias"])
    assert opened == 40.0 and close(out["y"], expected), (
        "with layer 0's gate bias set to +40 and then layer 1's to -40, layer 0 should carry "
        "x and layer 1 give relu(f1(x)); " + (
            f"setting layer 1's bias set layer 0's too (it reads {opened:g}): the two layers "
            "are one module, as [layer] * n makes it. Each layer needs weights of its own: "
            "build a new one per layer" if opened != 40.0 else
            "the output is something else: each layer reads the previous layer's output")
    )


@judged()
def test_the_highway_works_on_any_leading_shape(char_encoder):
    """(2, 5, dim) gives, row for row, what the (10, dim) of the same rows gives."""
    highway, x = highway_with_gate_bias(char_encoder, 0.5), inputs()
    rows = torch.cat([x, x.flip(0)])  # (10, dim)
    return {"y": highway(rows.view(2, 5, DIM)), "rows": highway(rows)}


@test_the_highway_works_on_any_leading_shape.judge
def _(out):
    y = out["y"]
    assert y.shape == (2, 5, DIM) and close(y.reshape(10, DIM), out["rows"]), (
        "Highway maps (..., dim) to (..., dim): split each layer's output into f and g along "
        "the last axis (dim=-1), whatever the leading axes")


# --- the character CNN -------------------------------------------------------------------

def stages(encoder, chars):
    """The encoder's output, and what its highway and its projection read (None if never
    called)."""
    seen = {}

    def keep(name):
        def hook(module, args, output):
            seen.setdefault(name, args[0])  # returns None: the output stays as it is
        return hook

    hooks = [encoder.highway.register_forward_hook(keep("highway")),
             encoder.projection.register_forward_hook(keep("projection"))]
    try:
        output = encoder(chars)
    finally:
        for hook in hooks:
            hook.remove()
    return output, seen.get("highway"), seen.get("projection")


def convolved(encoder, chars):
    """The characters, and each of the encoder's convolutions' width and responses (N,
    count, windows) to their embedding: what `pooled_by_hand` reads (the act's half)."""
    x = encoder.char_embedding(chars).transpose(1, 2)  # (N, char_dim, C)
    return {"chars": chars,
            "windows": [(conv.kernel_size[0], conv(x)) for conv in encoder.convolutions]}


def pooled_by_hand(responses):
    """(N, filters) each filter's largest response over the windows within each token (a
    token shorter than the filter: its first window), before the ReLU, of what `convolved`
    gave."""
    lengths = (responses["chars"] != 0).sum(dim=-1).tolist()
    features = []
    for width, windows in responses["windows"]:
        features.append(torch.stack([windows[i, :, : max(n - width, 0) + 1].amax(dim=-1)
                                     for i, n in enumerate(lengths)]))
    return torch.cat(features, dim=-1)


tokens = st.lists(st.one_of(letter_words(0, 20), st.sampled_from(MARKERS)), min_size=1,
                  max_size=4)
# (CharEncoder's arguments, (char_dim, filters) it should have)
FOLLOWED_FILTERS = ((2, 3), (5, 1), (1, 2))
FOLLOWED = [((12, 5, FOLLOWED_FILTERS, 3), (5, FOLLOWED_FILTERS)),
            ((256,), (16, characters.FILTERS))]


@judged()
def test_the_encoder_follows_its_arguments(char_encoder):
    """One convolution per (width, count) of filters, in order; padding embeds to zero; the
    highway reads one value per filter; the output is output_dim wide."""
    m = char_encoder
    chars = m.words_to_chars(["bank", "a", "<s>"])
    found = []
    for args, _ in FOLLOWED:
        encoder = m.CharEncoder(*args)
        convolutions = [(c.kernel_size[0], c.out_channels) for c in encoder.convolutions]
        padding = encoder.char_embedding(torch.tensor([m.CHAR_PAD])).detach()
        output, highway_input, _ = stages(encoder, chars)
        found.append({"convolutions": convolutions, "padding": padding,
                      "highway_input": highway_input, "output": output})
    return found


@test_the_encoder_follows_its_arguments.judge
def _(out):
    for (args, (char_dim, chosen)), got in zip(FOLLOWED, out, strict=True):
        where, features = f"CharEncoder{args}", sum(count for _, count in chosen)
        found = got["convolutions"]
        assert found == list(chosen), (
            f"{where}.convolutions: one convolution per (width, count) of filters, in order, "
            f"every width its own: (width, count) should be {list(chosen)}, found {found}")
        padding = got["padding"]
        assert padding.shape == (1, char_dim) and not padding.any(), (
            f"{where}.char_embedding: the padding character CHAR_PAD should embed to a zero "
            f"vector of char_dim = {char_dim}, so that a short token's one window reads only "
            f"its characters; got {padding.tolist()}")
        output, highway_input = got["output"], got["highway_input"]
        assert highway_input is not None and highway_input.shape == (3, features), (
            f"{where}: the highway should read one value per filter, (tokens, {features}), "
            f"got {None if highway_input is None else tuple(highway_input.shape)}")
        assert output.shape == (3, args[0]), (
            f"{where}: one output_dim = {args[0]} vector per token, got {tuple(output.shape)}")


@judged()
def test_the_output_has_the_projection_width_for_any_leading_shape(char_encoder):
    """(T, B, C) -> (T, B, output_dim) and (N, C) -> (N, output_dim)."""
    encoder = char_encoder.CharEncoder(12, char_dim=4, filters=((1, 2), (3, 2)))
    chars = char_encoder.words_to_chars(["a", "bank", "river", "<s>", "x", "by"]).view(3, 2, -1)
    return [(tuple(given_chars.shape), tuple(encoder(given_chars).shape))
            for given_chars in (chars, chars.view(6, -1))]


@test_the_output_has_the_projection_width_for_any_leading_shape.judge
def _(out):
    for (given_shape, found), shape in zip(out, [(3, 2, 12), (6, 12)], strict=True):
        assert found == shape, (
            f"characters of shape {given_shape} should give {shape}: one "
            f"output_dim = 12 vector per token, after the projection; got {found}")


@judged(words=tokens)
def test_each_filter_keeps_its_largest_window_within_the_token(char_encoder, encoder, words):
    """What the highway reads is, per filter, the max over the windows inside the token."""
    chars = char_encoder.words_to_chars(words)
    _, highway_input, _ = stages(encoder, chars)
    return {"highway_input": highway_input, "convolved": convolved(encoder, chars)}


@test_each_filter_keeps_its_largest_window_within_the_token.judge
def _(out, words):
    highway_input = out["highway_input"]
    assert highway_input is not None, "the encoder never called its highway"
    expected = pooled_by_hand(out["convolved"])
    assert highway_input.shape == expected.shape, (
        f"the highway should read (tokens, filters) = {tuple(expected.shape)}, got "
        f"{tuple(highway_input.shape)}")
    positive = expected > 0
    assert close(highway_input[positive], expected[positive]), (
        f"tokens {words}: each filter should keep its largest response (a max, not a mean) "
        "over the windows that lie wholly within the token, BOW to EOW, windows sliding "
        "along the characters; a token shorter than the filter has its first window only")


@pytest.mark.parametrize("widths, same, other, why", [
    (((1, 16), (2, 64)), ("abab", "ababab", "abababab"), "aba",
     "its last window, (a, END_OF_WORD), is in none of the others: the window that ends "
     "with END_OF_WORD counts"),
    (((1, 64),), ("ab", "ba"), "abc", "it holds a character the others lack"),
], ids=["repeated bigrams", "anagrams"])
@judged()
def test_a_max_sees_which_ngrams_a_word_holds_not_how_often(char_encoder, widths, same, other,
                                                            why):
    """With filters of widths 1 and 2 only, words holding the same characters and the same
    pairs (BOW and EOW included) get one vector, however often they hold them."""
    torch.manual_seed(0)
    encoder = char_encoder.CharEncoder(5, char_dim=4, filters=widths, highway_layers=1).eval()
    with torch.no_grad():
        return encoder(char_encoder.words_to_chars([*same, other]))


@test_a_max_sees_which_ngrams_a_word_holds_not_how_often.judge
def _(vectors, widths, same, other, why):
    for word, vector in zip(same[1:], vectors[1:len(same)], strict=True):
        assert_close(vector, vectors[0], f"the vector of {word!r} against {same[0]!r}",
                     atol=1e-5, rtol=1e-4,
                     hint=f"with filters of widths {[w for w, _ in widths]}, {same[0]!r} and "
                          f"{word!r} hold the same n-grams, so each filter's max over the "
                          "windows is the same (a mean or a sum would count them); are the "
                          "windows slid along the characters?")
    assert not torch.allclose(vectors[-1], vectors[0], atol=1e-4), (
        f"{other!r} got the vector of {same[0]!r}, though {why}")


@judged()
def test_the_maxima_go_through_a_relu_before_the_highway(char_encoder, encoder):
    """What the highway reads is relu(each filter's max): no negative value."""
    chars = char_encoder.words_to_chars(["bank", "<s>", "riverbank", "a"])
    _, highway_input, _ = stages(encoder, chars)
    return {"highway_input": highway_input, "convolved": convolved(encoder, chars)}


@test_the_maxima_go_through_a_relu_before_the_highway.judge
def _(out):
    highway_input = out["highway_input"]
    assert highway_input is not None, "the encoder never called its highway"
    assert highway_input.min() >= 0, (
        "the filters' maxima go through a ReLU before the highway (as in the paper's "
        f"released model); the highway read values down to {float(highway_input.min()):.3g}")
    assert_close(highway_input, F.relu(pooled_by_hand(out["convolved"])),
                 "what the highway reads", atol=1e-5, rtol=1e-4, hint=(
                     "it should be the ReLU of each filter's max over the windows that lie "
                     "within the token, the filters in their order"))


@judged(word=letter_words(5, 14))
def test_padding_after_a_word_changes_nothing(char_encoder, encoder, word):
    """A word's vector is the same with no padding, padded to 16 and padded to 24."""
    reading = characters_reading(char_encoder, encoder)
    spelled = [char_encoder.words_to_chars([word], max_chars)
               for max_chars in (len(word) + 2, char_encoder.MAX_CHARS, 24)]
    tight, *padded = (encoder(chars) for chars in spelled)
    return {"reading": reading, "tight": tight, "padded": padded}


@test_padding_after_a_word_changes_nothing.judge
def _(out, word):
    assert_encodes_the_characters(out["reading"])
    tight = out["tight"]
    for max_chars, vector in zip((characters.MAX_CHARS, 24), out["padded"], strict=True):
        assert close(vector, tight), (
            f"{word!r} padded to {max_chars} characters gives another vector than with "
            "no padding: a window that reaches into the padding must not count in the max")


@judged()
def test_the_highway_output_is_projected(char_encoder, encoder):
    """The projection reads the highway's output, and its output is the encoder's."""
    chars = char_encoder.words_to_chars(["bank", "banks", "<s>"])
    output, highway_input, projection_input = stages(encoder, chars)
    return {"output": output, "highway_input": highway_input,
            "projection_input": projection_input,
            # what the encoder's highway and projection give of what they read
            "highway_output": None if highway_input is None else encoder.highway(highway_input),
            "projected": (None if projection_input is None else
                          encoder.projection(projection_input))}


@test_the_highway_output_is_projected.judge
def _(out):
    output, highway_input, projection_input = (
        out["output"], out["highway_input"], out["projection_input"])
    assert highway_input is not None and projection_input is not None, (
        "the encoder should call its highway, then its projection")
    assert close(projection_input, out["highway_output"]), (
        "the projection should read the highway layers' output")
    assert close(output, out["projected"]), (
        "the encoder's output is the projection's")


@judged()
def test_the_encoder_works_on_the_device_of_its_input(char_encoder):
    """On the meta device (shapes, no values), module and characters: no tensor elsewhere."""
    torch.manual_seed(0)
    encoder = char_encoder.CharEncoder(4, char_dim=2, filters=((1, 2), (2, 2)))
    reading = characters_reading(char_encoder, encoder)
    encoder = encoder.to("meta")
    chars = torch.zeros(3, char_encoder.MAX_CHARS, dtype=torch.long, device="meta")
    return {"reading": reading, "mixed": mixed_devices(lambda: encoder(chars))}


@test_the_encoder_works_on_the_device_of_its_input.judge
def _(out):
    assert_encodes_the_characters(out["reading"])
    mixed = out["mixed"]
    assert mixed is None, (
        "make every index tensor on the characters' device (torch.arange(..., device="
        f"chars.device)), or the encoder fails on a GPU: {mixed}")


# --- the character biLM ------------------------------------------------------------------

SPELLED_IDS = [[2, 2], [40, 7], [7, 40], [3, 3]]


@judged()
def test_the_char_bilm_spells_its_vocabulary_and_encodes_the_characters(char_encoder,
                                                                       vocabulary):
    """embedding spells word ids out; token_projection is a CharEncoder of the given sizes;
    the output has the biLM's shapes, its logits over the vocabulary."""
    m = char_encoder
    model = m.CharBiLM(vocabulary, **SMALL).eval()
    ids = torch.tensor(SPELLED_IDS)
    words = [vocabulary[i] for i in ids[:, 0].tolist()]
    spelled = model.embedding(ids)
    encoder = model.token_projection
    found = {"spelled": spelled, "spelling": isinstance(model.embedding, m.Spelling),
             "words_to_chars": m.words_to_chars(words),
             "char_encoder": isinstance(encoder, m.CharEncoder),
             "encoder_type": type(encoder).__name__}
    if not found["char_encoder"]:
        return found
    found["sizes"] = ([c.kernel_size[0] for c in encoder.convolutions],
                      tuple(encoder(spelled).shape))
    with torch.no_grad():
        output = model(ids)
    return {**found, "layers": output.layers, "forward_logits": output.forward_logits}


@test_the_char_bilm_spells_its_vocabulary_and_encodes_the_characters.judge
def _(out, trusted):
    vocabulary = trusted.sections.corpus.build_vocab(CORPUS)[1]
    assert out["spelling"] and torch.equal(out["spelled"][:, 0], out["words_to_chars"]), (
        "CharBiLM.embedding should be a Spelling of the vocabulary: the characters of each "
        "word id")
    assert out["char_encoder"], (
        f"CharBiLM.token_projection should be a CharEncoder, found {out['encoder_type']}")
    found = out["sizes"]
    wanted = ([w for w, _ in SMALL["filters"]], (4, 2, SMALL["hidden_dim"]))
    assert found == wanted, (
        "CharBiLM(words, hidden_dim=16, char_dim=8, filters=((1, 4), (2, 4), (3, 8)), "
        "highway_layers=1) should give its encoder those filters and project to hidden_dim: "
        f"(widths, output shape) should be {wanted}, found {found}")
    layers, forward_logits = out["layers"], out["forward_logits"]
    assert layers.shape == (3, 4, 2, 2 * SMALL["hidden_dim"]), (
        f"layers should be (num_layers + 1, T, B, 2 * hidden_dim) = (3, 4, 2, 32), got "
        f"{tuple(layers.shape)}")
    assert forward_logits.shape == (4, 2, len(vocabulary)), (
        f"the logits should score the {len(vocabulary)} words of the vocabulary, got "
        f"{tuple(forward_logits.shape)}")


# (CharBiLM's options, (filter widths, char_dim, highway layers, hidden_dim, LSTM layers))
PASSED_ON = [({}, ([w for w, _ in characters.FILTERS], 16, 2, 256, 2)),
             (dict(hidden_dim=8, num_layers=3, char_dim=4, filters=((2, 3),), highway_layers=0),
              ([2], 4, 0, 8, 3))]


@judged()
def test_the_char_bilm_passes_its_sizes_on(char_encoder, vocabulary):
    """CharBiLM(words) has the stated defaults; num_layers and every other size is passed on."""
    m = char_encoder
    ids = torch.tensor([[2], [40], [3]])
    found = []
    for options, _ in PASSED_ON:
        model = m.CharBiLM(vocabulary, **options)
        encoder = model.token_projection
        with torch.no_grad():
            shape = tuple(model(ids).layers.shape)
        found.append(([c.kernel_size[0] for c in encoder.convolutions],
                      encoder.char_embedding.embedding_dim, len(encoder.highway.layers), shape))
    return found


@test_the_char_bilm_passes_its_sizes_on.judge
def _(out):
    for (options, (widths, char_dim, highway, hidden, layers)), found in zip(PASSED_ON, out,
                                                                             strict=True):
        wanted = (widths, char_dim, highway, (layers + 1, 3, 1, 2 * hidden))
        where = f"CharBiLM({', '.join(['words', *(f'{k}={v}' for k, v in options.items())])})"
        assert found == wanted, (
            f"{where}: (filter widths, char_dim, highway layers, shape of layers) should be "
            f"{wanted} (the defaults: FILTERS, 16, 2, hidden_dim 256, 2 LSTM layers), found "
            f"{found}")


@judged()
def test_an_unseen_word_gets_a_layer_0_of_its_own(char_encoder, small):
    """Layer 0 of castle and riverbank, words the corpus lacks: not <unk>'s, not alike."""
    m = char_encoder
    sentence = ["<s>", "castle", "riverbank", "<unk>", "</s>"]
    return small(m.words_to_chars(sentence).unsqueeze(1)).layers[0, :, 0]


@test_an_unseen_word_gets_a_layer_0_of_its_own.judge
def _(layer0):
    for position, word in ((1, "castle"), (2, "riverbank")):
        assert not torch.allclose(layer0[position], layer0[3], **TOL), (
            f"layer 0 of {word!r} is the vector of '<unk>': a word's characters make its "
            "vector, so that a word outside the vocabulary is not unknown")
    assert not torch.allclose(layer0[1], layer0[2], **TOL), (
        "castle and riverbank, two unseen words, got the same layer 0")


@judged()
def test_a_words_layer_0_is_the_same_in_any_sentence(char_encoder, small):
    """bank's layer 0 beside short words and beside long ones is one vector."""
    m = char_encoder
    vectors = []
    for sentence in ("we sat on the bank", "the television was by the bank"):
        chars, lengths = m.sentence_chars([sentence])
        layer0 = small(chars, lengths).layers[0, :, 0]
        vectors.append(layer0[-2])
    return {"vectors": vectors, "layer0": layer0}


@test_a_words_layer_0_is_the_same_in_any_sentence.judge
def _(out):
    vectors, layer0 = out["vectors"], out["layer0"]
    assert not close(layer0[-2], layer0[-3]), (
        "layer 0 of 'bank' is the vector of 'the': every word's layer 0 is one vector, so it "
        "is the same in any sentence without reading the word. A word's layer 0 comes from "
        "its characters, through the CharEncoder")
    assert torch.equal(vectors[0], vectors[1]), (
        "layer 0 of 'bank' changed with its sentence: each token is encoded from its own "
        "characters alone, however long the other tokens of the batch are")


@judged(batch=id_batches(120, max_batch=4, max_len=8))
def test_padded_batch_equals_one_sentence_at_a_time(corpus, small, vocabulary, batch):
    """Each sentence of a padded batch of word ids gets what it gets alone."""
    reading = sentence_reading(small, len(vocabulary))
    ids, lengths = corpus.pad_batch(batch)
    return {"reading": reading, "together": small(ids, lengths).layers,
            "alone": [small(torch.tensor(sentence).unsqueeze(1)).layers for sentence in batch]}


@test_padded_batch_equals_one_sentence_at_a_time.judge
def _(out, batch):
    assert_reads_the_sentence(out["reading"])
    together, padded = out["together"], max(len(sentence) for sentence in batch)
    for b, (sentence, alone) in enumerate(zip(batch, out["alone"], strict=True)):
        n = len(sentence)
        assert close(together[:, :n, b], alone[:, :, 0]), (
            f"sentence {b} (length {n}, in a batch of {len(batch)} padded to {padded}) "
            "gets other layers than alone: the encoder's (T, B, C) characters are tokens "
            "t, b; keep each token's vector at its own position")


@st.composite
def one_token_changed(draw):
    """(two sentences of one length, 3..8 ids in [1, 120), k in [1, length - 2]): token k
    of sentence 0 is the one changed."""
    length = draw(st.integers(3, 8))
    sentences = [draw(id_sequences(120, length, length)) for _ in range(2)]
    return sentences, draw(st.integers(1, length - 2))


@judged(change=one_token_changed())
def test_no_direction_sees_the_token_it_predicts(small, vocabulary, change):
    """Changing token k of sentence 0 leaves its forward states before k and its backward
    states after k unchanged."""
    reading = sentence_reading(small, len(vocabulary))
    sentences, k = change
    ids = torch.stack([torch.tensor(sentence) for sentence in sentences], dim=1)
    changed = ids.clone()
    changed[k, 0] = ids[k, 0] % 119 + 1  # another real token
    return {"reading": reading, "before": small(ids).layers[1:, :, 0],
            "after": small(changed).layers[1:, :, 0]}


@test_no_direction_sees_the_token_it_predicts.judge
def _(out, change):
    assert_reads_the_sentence(out["reading"])
    h = SMALL["hidden_dim"]
    _, k = change
    before, after = out["before"], out["after"]
    assert close(before[:, :k, :h], after[:, :k, :h]), (
        f"changing token {k} changed the forward states at positions < {k}: a token's vector "
        "must come from its own characters only, never from the other tokens of the batch")
    assert close(before[:, k + 1 :, h:], after[:, k + 1 :, h:]), (
        f"changing token {k} changed the backward states at positions > {k}: a token's "
        "vector must come from its own characters only, never from the other tokens")


@judged()
def test_same_input_twice_gives_identical_output(small, vocabulary):
    """Two calls on one input give bit-identical layers: nothing random in eval mode."""
    reading = sentence_reading(small, len(vocabulary))
    ids = torch.tensor([[2], [40], [7], [3]])
    return {"reading": reading, "first": small(ids).layers, "second": small(ids).layers}


@test_same_input_twice_gives_identical_output.judge
def _(out):
    assert_reads_the_sentence(out["reading"])
    assert torch.equal(out["first"], out["second"]), (
        "the same input gave different layers on a second call: nothing in the encoder may "
        "be random in eval mode (F.dropout drops at random unless told training=False)")


@judged()
def test_train_bilm_trains_every_part_of_a_char_bilm(setup, char_encoder, corpus, pretrain,
                                                     vocabulary):
    """Training by section 4's train_bilm (its fake, a plain trainer) lowers a CharBiLM's loss
    and moves every encoder parameter."""
    setup.set_seed(0)
    model = char_encoder.CharBiLM(vocabulary, **SMALL)
    reading = sentence_reading(model, len(vocabulary))
    start = {name: p.detach().clone() for name, p in model.token_projection.named_parameters()}
    # the parameters by their ids: those of the convolutions, and those the model registers
    convolutions = [id(p) for c in model.token_projection.convolutions for p in c.parameters()]
    registered = [id(p) for p in model.parameters()]
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    history = pretrain.train_bilm(model, corpus.CORPUS[:4], word2idx, pretrain.Recipe(2, 0.01, 3),
                                  device="cpu", log_every=0, progress=False)
    still = [name for name, p in model.token_projection.named_parameters()
             if torch.equal(p.detach(), start[name])]
    return {"reading": reading, "convolutions": convolutions, "registered": registered,
            "history": history, "still": still}


@test_train_bilm_trains_every_part_of_a_char_bilm.judge
def _(out):
    assert_reads_the_sentence(out["reading"])
    convolutions, registered = set(out["convolutions"]), set(out["registered"])
    assert convolutions <= registered, (
        "the convolutions' weights are not among the CharBiLM's parameters(): no optimizer "
        "would train them; keep them in an nn.ModuleList")
    history = out["history"]
    assert history[-1] < history[0], f"the loss should fall over 3 epochs, got {history}"
    still = out["still"]
    assert not still, f"training left these encoder parameters unchanged: {still}"
