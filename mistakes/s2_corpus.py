"""Section 2 (corpus): mistakes in tokenizing, numbering the vocabulary, encoding, padding."""

from tools.mistakes import Alternative, Edit, Mistake

# The code a learner writes in each function the mistakes below edit: the reference's, as
# it was when they were written. A mistake edits this copy, and the edited code replaces
# the function's whole marked block, so that a refactor of solutions/ leaves it as it is.
LEARNER_CODE = {
    "tokenize": """
    return _WORD.findall(text.lower())
    """,
    "build_vocab": """
    words = sorted({word for sentence in sentences for word in tokenize(sentence)})
    idx2word = dict(enumerate([*SPECIAL_TOKENS, *words]))
    word2idx = {word: idx for idx, word in idx2word.items()}
    return word2idx, idx2word
    """,
    "encode": """
    words = tokenize(sentence) if isinstance(sentence, str) else list(sentence)
    ids = [word2idx.get(word, UNK) for word in words]
    return [BOS, *ids, EOS] if add_boundaries else ids
    """,
    "decode": """
    return [idx2word[i] for i in ids]
    """,
    "pad_batch": """
    lengths = torch.tensor([len(seq) for seq in sequences], dtype=torch.long)
    ids = torch.full((int(lengths.max()), len(sequences)), PAD, dtype=torch.long)
    for column, seq in enumerate(sequences):
        ids[: len(seq), column] = torch.as_tensor(list(seq), dtype=torch.long)
    return ids, lengths
    """,
}

MISTAKES = [
    Mistake(
        "case-kept",
        "tokenize splits the text without lower-casing it first",
        caught_by="test_tokenize_lowercases_and_drops_punctuation",
        edits=[Edit("tokenize", "_WORD.findall(text.lower())", "_WORD.findall(text)")],
    ),
    Mistake(
        "punctuation-kept",
        "tokenize splits the lower-cased text at spaces, so 'right,' and 'river!' are words",
        caught_by="test_tokenize_lowercases_and_drops_punctuation",
        edits=[Edit("tokenize", "_WORD.findall(text.lower())", "text.lower().split()")],
    ),
    Mistake(
        "contraction-split",
        r"tokenize takes runs of \w, so \"don't\" becomes 'don' and 't'",
        caught_by="test_tokenize_keeps_contractions_and_digits_and_splits_at_hyphens",
        edits=[Edit("tokenize", "_WORD.findall(text.lower())",
                    r're.findall(r"\w+", text.lower())')],
    ),
    Mistake(
        "digits-dropped",
        "tokenize keeps letters and apostrophes only, so '2' is no word",
        caught_by="test_tokenize_keeps_contractions_and_digits_and_splits_at_hyphens",
        edits=[Edit("tokenize", "_WORD.findall(text.lower())",
                    """re.findall(r"[a-z']+", text.lower())""")],
    ),
    Mistake(
        "hyphen-kept",
        "tokenize keeps hyphens inside words, so 'co-op' is one word",
        caught_by="test_tokenize_keeps_contractions_and_digits_and_splits_at_hyphens",
        edits=[Edit("tokenize", "_WORD.findall(text.lower())",
                    """re.findall(r"[a-z0-9'-]+", text.lower())""")],
    ),
    Mistake(
        "vocabulary-split-on-spaces",
        "build_vocab splits sentences with str.split instead of tokenize",
        caught_by="test_the_vocabulary_holds_the_words_that_tokenize_gives",
        edits=[Edit("build_vocab", "for word in tokenize(sentence)",
                    "for word in sentence.split()")],
    ),
    Mistake(
        "vocabulary-in-set-order",
        "build_vocab numbers the words in the order of a set, which changes between runs",
        caught_by="test_words_are_numbered_in_sorted_order",
        edits=[Edit("build_vocab", "words = sorted({", "words = list({")],
    ),
    Mistake(
        "special-tokens-last",
        "build_vocab numbers the corpus's words first and appends the special tokens",
        caught_by="test_special_tokens_have_fixed_indices",
        edits=[Edit("build_vocab", "[*SPECIAL_TOKENS, *words]", "[*words, *SPECIAL_TOKENS]")],
    ),
    Mistake(
        "special-tokens-forgotten",
        "build_vocab numbers the corpus's words from 0 and has no special tokens",
        caught_by="test_special_tokens_have_fixed_indices",
        edits=[Edit("build_vocab", "dict(enumerate([*SPECIAL_TOKENS, *words]))",
                    "dict(enumerate(words))")],
    ),
    Mistake(
        "unknown-word-raises",
        "encode looks words up with word2idx[word], so an unknown word raises KeyError",
        caught_by="test_unknown_word_becomes_unk",
        edits=[Edit("encode", "word2idx.get(word, UNK)", "word2idx[word]")],
    ),
    Mistake(
        "unknown-word-is-padding",
        "encode maps an unknown word to index 0, which is <pad>",
        caught_by="test_unknown_word_becomes_unk",
        edits=[Edit("encode", "word2idx.get(word, UNK)", "word2idx.get(word, 0)")],
    ),
    Mistake(
        "unknown-word-dropped",
        "encode skips the words it does not know",
        caught_by="test_unknown_word_becomes_unk",
        edits=[Edit("encode", "[word2idx.get(word, UNK) for word in words]",
                    "[word2idx[word] for word in words if word in word2idx]")],
    ),
    Mistake(
        "boundaries-swapped",
        "encode wraps the sentence as </s> ... <s>",
        caught_by="test_encode_adds_boundaries_on_request",
        edits=[Edit("encode", "[BOS, *ids, EOS]", "[EOS, *ids, BOS]")],
    ),
    Mistake(
        "boundaries-always-added",
        "encode adds <s> and </s> whether or not add_boundaries asks for them",
        caught_by="test_encode_then_decode_gives_the_words_back",
        edits=[Edit("encode", "[BOS, *ids, EOS] if add_boundaries else ids", "[BOS, *ids, EOS]")],
    ),
    Mistake(
        "a-list-of-words-tokenized",
        "encode passes whatever it gets to tokenize, a list of words too",
        caught_by="test_encode_adds_boundaries_on_request",
        edits=[Edit("encode",
                    "words = tokenize(sentence) if isinstance(sentence, str) else list(sentence)",
                    "words = tokenize(sentence)")],
    ),
    Mistake(
        "decode-joins-the-words",
        "decode returns the words joined into one string",
        caught_by="test_encode_then_decode_gives_the_words_back",
        edits=[Edit("decode", "return [idx2word[i] for i in ids]",
                    'return " ".join(idx2word[i] for i in ids)')],
    ),
    Mistake(
        "batch-major-padding",
        "pad_batch returns a batch-major (B, T) tensor",
        caught_by="test_pad_batch_is_time_major_and_pads_at_the_end",
        edits=[Edit("pad_batch", "torch.full((int(lengths.max()), len(sequences))",
                    "torch.full((len(sequences), int(lengths.max()))"),
               Edit("pad_batch", "ids[: len(seq), column]", "ids[column, : len(seq)]")],
    ),
    Mistake(
        "left-padding",
        "pad_batch puts the padding before each sentence",
        caught_by="test_pad_batch_is_time_major_and_pads_at_the_end",
        edits=[Edit("pad_batch", "ids[: len(seq), column]",
                    "ids[int(lengths.max()) - len(seq) :, column]")],
    ),
    Mistake(
        "padded-to-the-first-length",
        "pad_batch pads every sequence to the length of the first one",
        caught_by="test_pad_batch_is_time_major_and_pads_at_the_end",
        edits=[Edit("pad_batch", "torch.full((int(lengths.max()), len(sequences))",
                    "torch.full((len(sequences[0]), len(sequences))")],
    ),
    Mistake(
        "float-padding",
        "pad_batch starts from torch.zeros, a float tensor",
        caught_by="test_pad_batch_is_time_major_and_pads_at_the_end",
        edits=[Edit("pad_batch",
                    "torch.full((int(lengths.max()), len(sequences)), PAD, dtype=torch.long)",
                    "torch.zeros(int(lengths.max()), len(sequences))")],
    ),
    Mistake(
        "lengths-as-a-list",
        "pad_batch returns the lengths as a python list",
        caught_by="test_pad_batch_is_time_major_and_pads_at_the_end",
        edits=[Edit("pad_batch", "torch.tensor([len(seq) for seq in sequences], dtype=torch.long)",
                    "[len(seq) for seq in sequences]"),
               Edit("pad_batch", "int(lengths.max())", "max(lengths)")],
    ),
    Mistake(
        "vocabulary-of-the-first-sentence",
        "build_vocab collects the words of the first sentence only",
        caught_by="test_vocabulary_is_complete_and_inverse",
        edits=[Edit("build_vocab", "for sentence in sentences for word", "for sentence in "
                    "sentences[:1] for word")],
    ),
    Mistake(
        "decode-drops-special-tokens",
        "decode leaves out the indices of <pad>, <unk>, <s> and </s>",
        caught_by="test_encode_then_decode_gives_the_words_back",
        edits=[Edit("decode", "return [idx2word[i] for i in ids]",
                    "return [idx2word[i] for i in ids if i >= len(SPECIAL_TOKENS)]")],
    ),
    Mistake(
        "encode-splits-on-spaces",
        "encode splits a string with str.split instead of tokenize",
        caught_by="test_encode_tokenizes_a_string_as_tokenize_does",
        edits=[Edit("encode", "tokenize(sentence) if isinstance",
                    "sentence.split() if isinstance")],
    ),
]


ALTERNATIVES = [
    Alternative(
        "tokenize-by-substitution",
        "tokenize replaces every run of other characters with a space, then splits",
        edits=[Edit("tokenize", "return _WORD.findall(text.lower())",
                    """return re.sub(r"[^a-z0-9']+", " ", text.lower()).split()""")],
    ),
    Alternative(
        "vocabulary-by-a-loop",
        "build_vocab collects the words in a loop and numbers them one by one",
        edits=[Edit("build_vocab", """
            words = sorted({word for sentence in sentences for word in tokenize(sentence)})
            idx2word = dict(enumerate([*SPECIAL_TOKENS, *words]))
            word2idx = {word: idx for idx, word in idx2word.items()}
        """, """
            seen = set()
            for sentence in sentences:
                seen.update(tokenize(sentence))
            word2idx = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
            for word in sorted(seen):
                word2idx[word] = len(word2idx)
            idx2word = {i: word for word, i in word2idx.items()}
        """)],
    ),
    Alternative(
        "padding-by-pad-sequence",
        "pad_batch with torch.nn.utils.rnn.pad_sequence",
        edits=[Edit("pad_batch", """
            ids = torch.full((int(lengths.max()), len(sequences)), PAD, dtype=torch.long)
            for column, seq in enumerate(sequences):
                ids[: len(seq), column] = torch.as_tensor(list(seq), dtype=torch.long)
        """, """
            ids = torch.nn.utils.rnn.pad_sequence(
                [torch.tensor(list(seq)) for seq in sequences], padding_value=PAD)
        """)],
    ),
]
