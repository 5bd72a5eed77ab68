"""Section 8 (char_encoder): mistakes in the character mapper, the highway layers, the
character CNN's pooling and the character biLM."""

from tools.mistakes import Alternative, Edit, Mistake

# The code a learner writes in each function the mistakes below edit: the reference's, as
# it was when they were written. A mistake edits this copy, and the edited code replaces
# the function's whole marked block, so that a refactor of solutions/ leaves it as it is.
LEARNER_CODE = {
    "char_ids": """
    if word in _MARKERS:
        body = [_MARKERS[word]]
    else:
        body = [FIRST_BYTE + byte for byte in word.encode("utf-8")][: max_chars - 2]
    ids = [BEGIN_OF_WORD, *body, END_OF_WORD]
    return ids + [CHAR_PAD] * (max_chars - len(ids))
    """,
    "Highway.__init__": """
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, 2 * dim) for _ in range(num_layers))
        with torch.no_grad():
            for layer in self.layers:
                layer.bias[dim:].fill_(1.0)  # the gate's bias: carry the input at first
        """,
    "Highway.forward": """
        for layer in self.layers:
            transformed, gate = layer(x).chunk(2, dim=-1)
            gate = torch.sigmoid(gate)
            x = gate * x + (1 - gate) * F.relu(transformed)
        return x
        """,
    "CharEncoder.__init__": """
        super().__init__()
        self.char_embedding = nn.Embedding(CHAR_VOCAB_SIZE, char_dim, padding_idx=CHAR_PAD)
        self.convolutions = nn.ModuleList(
            nn.Conv1d(char_dim, count, width) for width, count in filters)
        features = sum(count for _, count in filters)
        self.highway = Highway(features, highway_layers)
        self.projection = nn.Linear(features, output_dim)
        """,
    "CharEncoder.forward": """
        flat = chars.reshape(-1, chars.shape[-1])  # (N, C)
        lengths = (flat != CHAR_PAD).sum(dim=-1)  # (N,) characters of each token, BOW/EOW too
        x = self.char_embedding(flat).transpose(1, 2)  # (N, char_dim, C)
        pooled = []
        for conv in self.convolutions:
            width = conv.kernel_size[0]
            windows = conv(x)  # (N, count, C - width + 1): window s covers s .. s + width - 1
            starts = torch.arange(windows.shape[-1], device=chars.device)
            last_start = (lengths - width).clamp(min=0)  # a short token: its first window
            inside = starts.unsqueeze(0) <= last_start.unsqueeze(1)  # (N, C - width + 1)
            windows = windows.masked_fill(~inside.unsqueeze(1), float("-inf"))
            pooled.append(windows.max(dim=-1).values)  # (N, count)
        features = self.highway(F.relu(torch.cat(pooled, dim=-1)))  # (N, sum of counts)
        return self.projection(features).reshape(*chars.shape[:-1], -1)
        """,
    "CharBiLM.__init__": """
        super().__init__(len(words), embedding_dim=1, hidden_dim=hidden_dim,
                         num_layers=num_layers)
        self.embedding = Spelling(words)
        self.token_projection = CharEncoder(hidden_dim, char_dim, filters, highway_layers)
        """,
}

BODY = """
if word in _MARKERS:
    body = [_MARKERS[word]]
else:
    body = [FIRST_BYTE + byte for byte in word.encode("utf-8")][: max_chars - 2]
"""
HIGHWAY_LOOP = """
for layer in self.layers:
    transformed, gate = layer(x).chunk(2, dim=-1)
    gate = torch.sigmoid(gate)
    x = gate * x + (1 - gate) * F.relu(transformed)
return x
"""
GATE_BIAS = """
with torch.no_grad():
    for layer in self.layers:
        layer.bias[dim:].fill_(1.0)  # the gate's bias: carry the input at first
"""
MASK = 'windows = windows.masked_fill(~inside.unsqueeze(1), float("-inf"))'
POOL = "pooled.append(windows.max(dim=-1).values)  # (N, count)"
FEATURES = "features = self.highway(F.relu(torch.cat(pooled, dim=-1)))  # (N, sum of counts)"
CONVOLUTIONS = """
self.convolutions = nn.ModuleList(
    nn.Conv1d(char_dim, count, width) for width, count in filters)
features = sum(count for _, count in filters)
"""
OUTPUT = "return self.projection(features).reshape(*chars.shape[:-1], -1)"

MISTAKES = [
    Mistake(
        "no-bow-eow",
        "char_ids gives the word's bytes and padding, without BEGIN_OF_WORD and END_OF_WORD",
        caught_by="test_a_word_is_bow_its_bytes_eow_then_padding",
        edits=[Edit("char_ids", "ids = [BEGIN_OF_WORD, *body, END_OF_WORD]", "ids = [*body]")],
    ),
    Mistake(
        "code-points-not-bytes",
        "char_ids numbers the word's characters by ord(), not its UTF-8 bytes",
        caught_by="test_a_word_is_bow_its_bytes_eow_then_padding",
        edits=[Edit("char_ids", 'for byte in word.encode("utf-8")', "for byte in map(ord, word)")],
    ),
    Mistake(
        "markers-without-bow-eow",
        "<s> and </s> are given as their marker alone, without BOW and EOW around it",
        caught_by="test_the_sentence_boundaries_are_one_marker_each",
        edits=[Edit("char_ids", BODY, """
if word in _MARKERS:
    return [_MARKERS[word]] + [CHAR_PAD] * (max_chars - 1)
body = [FIRST_BYTE + byte for byte in word.encode("utf-8")][: max_chars - 2]
""")],
    ),
    Mistake(
        "gate-bias-zero",
        "the highway's linear layers keep nn.Linear's bias initialisation",
        caught_by="test_the_gate_bias_starts_at_one",
        edits=[Edit("Highway.__init__", GATE_BIAS, "")],
    ),
    Mistake(
        "gate-the-wrong-way-round",
        "the highway computes t * relu(f) + (1 - t) * x",
        caught_by="test_a_gate_wide_open_carries_the_input",
        edits=[Edit("Highway.forward", "x = gate * x + (1 - gate) * F.relu(transformed)",
                    "x = gate * F.relu(transformed) + (1 - gate) * x")],
    ),
    Mistake(
        "no-relu-in-the-highway",
        "the highway's transform is f itself, without the ReLU",
        caught_by="test_a_gate_shut_transforms_through_a_relu",
        edits=[Edit("Highway.forward", "(1 - gate) * F.relu(transformed)",
                    "(1 - gate) * transformed")],
    ),
    Mistake(
        "highway-layers-read-the-input",
        "every highway layer reads the highway's input, and only the last one's output is kept",
        caught_by="test_a_gate_shut_transforms_through_a_relu",
        edits=[Edit("Highway.forward", HIGHWAY_LOOP, """
y = x
for layer in self.layers:
    transformed, gate = layer(x).chunk(2, dim=-1)
    gate = torch.sigmoid(gate)
    y = gate * x + (1 - gate) * F.relu(transformed)
return y
""")],
    ),
    Mistake(
        "no-char-padding-idx",
        "the character embedding is built without padding_idx",
        caught_by="test_the_encoder_follows_its_arguments",
        edits=[Edit("CharEncoder.__init__",
                    "nn.Embedding(CHAR_VOCAB_SIZE, char_dim, padding_idx=CHAR_PAD)",
                    "nn.Embedding(CHAR_VOCAB_SIZE, char_dim)")],
    ),
    Mistake(
        "one-convolution-for-all-filters",
        "one convolution of width 3 holds all the filters, whatever their widths",
        caught_by="test_the_encoder_follows_its_arguments",
        edits=[Edit("CharEncoder.__init__", CONVOLUTIONS, """
features = sum(count for _, count in filters)
self.convolutions = nn.ModuleList([nn.Conv1d(char_dim, features, 3)])
""")],
    ),
    Mistake(
        "convolutions-in-a-plain-list",
        "the convolutions are kept in a plain python list",
        caught_by="test_train_bilm_trains_every_part_of_a_char_bilm",
        edits=[Edit("CharEncoder.__init__", "self.convolutions = nn.ModuleList(",
                    "self.convolutions = list(")],
    ),
    Mistake(
        "zero-initialised-characters",
        "the character embedding starts at zero, as the padding's does",
        caught_by="test_an_unseen_word_gets_a_layer_0_of_its_own",
        edits=[Edit("CharEncoder.__init__",
                    "self.char_embedding = nn.Embedding(CHAR_VOCAB_SIZE, char_dim, "
                    "padding_idx=CHAR_PAD)\n",
                    "self.char_embedding = nn.Embedding(CHAR_VOCAB_SIZE, char_dim, "
                    "padding_idx=CHAR_PAD)\nnn.init.zeros_(self.char_embedding.weight)\n")],
    ),
    Mistake(
        "max-pool-over-padding",
        "each filter's max is taken over every window, those that reach into the padding too",
        caught_by="test_padding_after_a_word_changes_nothing",
        edits=[Edit("CharEncoder.forward", MASK + "\n", "")],
    ),
    Mistake(
        "mask-misses-the-last-window",
        "the mask keeps windows starting before length - width, not up to it",
        caught_by="test_each_filter_keeps_its_largest_window_within_the_token",
        edits=[Edit("CharEncoder.forward", "starts.unsqueeze(0) <= last_start.unsqueeze(1)",
                    "starts.unsqueeze(0) < last_start.unsqueeze(1)")],
    ),
    Mistake(
        "mean-pool",
        "each filter's responses are averaged over the token's windows, not maxed",
        caught_by="test_each_filter_keeps_its_largest_window_within_the_token",
        edits=[Edit("CharEncoder.forward", MASK, "windows = windows * inside.unsqueeze(1)"),
               Edit("CharEncoder.forward", POOL,
                    "pooled.append(windows.sum(dim=-1) / inside.sum(dim=-1, keepdim=True))")],
    ),
    Mistake(
        "convolved-over-the-embedding",
        "the convolutions slide over the embedding's dimensions, the characters as channels",
        caught_by="test_each_filter_keeps_its_largest_window_within_the_token",
        edits=[Edit("CharEncoder.forward", "self.char_embedding(flat).transpose(1, 2)",
                    "self.char_embedding(flat)")],
    ),
    Mistake(
        "no-relu-before-the-highway",
        "the filters' maxima go into the highway without a ReLU",
        caught_by="test_the_maxima_go_through_a_relu_before_the_highway",
        edits=[Edit("CharEncoder.forward", "self.highway(F.relu(torch.cat(pooled, dim=-1)))",
                    "self.highway(torch.cat(pooled, dim=-1))")],
    ),
    Mistake(
        "highway-skipped",
        "the maxima are projected directly, without the highway layers",
        caught_by="test_the_highway_output_is_projected",
        edits=[Edit("CharEncoder.forward", FEATURES,
                    "features = F.relu(torch.cat(pooled, dim=-1))")],
    ),
    Mistake(
        "projection-skipped",
        "the highway's output is the token representation, without the projection",
        caught_by="test_the_output_has_the_projection_width_for_any_leading_shape",
        edits=[Edit("CharEncoder.forward", OUTPUT,
                    "return features.reshape(*chars.shape[:-1], -1)")],
    ),
    Mistake(
        "window-index-on-the-cpu",
        "the encoder makes its window indices on the CPU, whatever the characters' device",
        caught_by="test_the_encoder_works_on_the_device_of_its_input",
        edits=[Edit("CharEncoder.forward", "torch.arange(windows.shape[-1], device=chars.device)",
                    "torch.arange(windows.shape[-1])")],
    ),
    Mistake(
        "mask-by-the-longest-token",
        "every token's windows are masked by the length of the longest token of the batch",
        caught_by="test_a_words_layer_0_is_the_same_in_any_sentence",
        edits=[Edit("CharEncoder.forward", "(lengths - width).clamp(min=0)",
                    "(lengths.max() - width).clamp(min=0).expand_as(lengths)")],
    ),
    Mistake(
        "tokens-read-back-batch-major",
        "the flattened (T * B) tokens are read back as (B, T) and swapped into place",
        caught_by="test_padded_batch_equals_one_sentence_at_a_time",
        edits=[Edit("CharEncoder.forward", OUTPUT,
                    "return self.projection(features).reshape(*chars.shape[:-1][::-1], "
                    "-1).movedim(0, -2)")],
    ),
    Mistake(
        "features-centred-over-the-batch",
        "the pooled features are centred with their mean over the batch's tokens",
        caught_by="test_no_direction_sees_the_token_it_predicts",
        edits=[Edit("CharEncoder.forward", FEATURES + "\n", """
features = F.relu(torch.cat(pooled, dim=-1))
features = self.highway(features - features.mean(dim=0))
""")],
    ),
    Mistake(
        "dropout-always-on",
        "the encoder adds F.dropout(features, 0.1), which drops even in eval mode",
        caught_by="test_same_input_twice_gives_identical_output",
        edits=[Edit("CharEncoder.forward", FEATURES,
                    "features = F.dropout(self.highway(F.relu(torch.cat(pooled, dim=-1))), 0.1)")],
    ),
    Mistake(
        "encoder-sizes-not-passed",
        "the CharBiLM builds its CharEncoder with the default sizes, whatever it is given",
        caught_by="test_the_char_bilm_spells_its_vocabulary_and_encodes_the_characters",
        edits=[Edit("CharBiLM.__init__",
                    "CharEncoder(hidden_dim, char_dim, filters, highway_layers)",
                    "CharEncoder(hidden_dim)")],
    ),
    Mistake(
        "one-highway-layer-repeated",
        "Highway repeats one layer: nn.ModuleList([nn.Linear(dim, 2 * dim)] * num_layers)",
        caught_by="test_each_highway_layer_has_weights_of_its_own",
        edits=[Edit("Highway.__init__",
                    "nn.ModuleList(nn.Linear(dim, 2 * dim) for _ in range(num_layers))",
                    "nn.ModuleList([nn.Linear(dim, 2 * dim)] * num_layers)")],
    ),
]


ALTERNATIVES = [
    Alternative(
        "highway-layers-appended",
        "Highway appends a new nn.Linear per layer to an empty nn.ModuleList",
        edits=[Edit("Highway.__init__", """
            self.layers = nn.ModuleList(nn.Linear(dim, 2 * dim) for _ in range(num_layers))
        """, """
            self.layers = nn.ModuleList()
            for _ in range(num_layers):
                self.layers.append(nn.Linear(dim, 2 * dim))
        """)],
    ),
    Alternative(
        "length-from-the-end-of-word",
        "a token's length is where its END_OF_WORD stands, plus one, not its count of ids",
        edits=[Edit("CharEncoder.forward",
                    "lengths = (flat != CHAR_PAD).sum(dim=-1)  # (N,) characters of each token, "
                    "BOW/EOW too",
                    "lengths = (flat == END_OF_WORD).long().argmax(dim=-1) + 1")],
    ),
    Alternative(
        "char-bilm-replaces-a-full-size-embedding",
        "the CharBiLM lets BiLM build a word embedding of hidden_dim, then replaces it",
        edits=[Edit("CharBiLM.__init__", "embedding_dim=1", "embedding_dim=hidden_dim")],
    ),
    Alternative(
        "highway-halves-by-slicing",
        "each highway layer slices f and g out of its output instead of chunking it",
        edits=[Edit("Highway.forward", "transformed, gate = layer(x).chunk(2, dim=-1)\n",
                    "both = layer(x)\n"
                    "half = both.shape[-1] // 2\n"
                    "transformed, gate = both[..., :half], both[..., half:]\n")],
    ),
]
