"""Section 2 (corpus): mistakes in tokenizing, numbering the vocabulary, encoding, padding."""

from tools.mistakes import Edit, Mistake

MISTAKES = [
    Mistake(
        "case-kept",
        "tokenize splits the text without lower-casing it first",
        concept="one word is one token, however it is capitalised",
        caught_by="test_tokenize_lowercases_and_drops_punctuation",
        edits=[Edit("tokenize", "_WORD.findall(text.lower())", "_WORD.findall(text)")],
    ),
    Mistake(
        "vocabulary-in-set-order",
        "build_vocab numbers the words in the order of a set, which changes between runs",
        concept="one corpus always gives one numbering: sorted, never hash order",
        caught_by="test_words_are_numbered_in_sorted_order",
        edits=[Edit("build_vocab", "words = sorted({", "words = list({")],
    ),
    Mistake(
        "special-tokens-last",
        "build_vocab numbers the corpus's words first and appends the special tokens",
        concept="<pad>, <unk>, <s>, </s> keep the fixed indices 0-3",
        caught_by="test_special_tokens_have_fixed_indices",
        edits=[Edit("build_vocab", "[*SPECIAL_TOKENS, *words]", "[*words, *SPECIAL_TOKENS]")],
    ),
    Mistake(
        "unknown-word-raises",
        "encode looks words up with word2idx[word], so an unknown word raises KeyError",
        concept="a word outside the vocabulary becomes <unk>",
        caught_by="test_unknown_word_becomes_unk",
        edits=[Edit("encode", "word2idx.get(word, UNK)", "word2idx[word]")],
    ),
    Mistake(
        "boundaries-swapped",
        "encode wraps the sentence as </s> ... <s>",
        concept="the forward LM starts from <s>, the backward LM from </s>",
        caught_by="test_encode_adds_boundaries_on_request",
        edits=[Edit("encode", "[BOS, *ids, EOS]", "[EOS, *ids, BOS]")],
    ),
    Mistake(
        "batch-major-padding",
        "pad_batch returns a batch-major (B, T) tensor",
        concept="the course's batches are time-major: (seq_len, batch)",
        caught_by="test_pad_batch_pads_at_the_end",
        edits=[Edit("pad_batch", "torch.full((int(lengths.max()), len(sequences))",
                    "torch.full((len(sequences), int(lengths.max()))"),
               Edit("pad_batch", "ids[: len(seq), column]", "ids[column, : len(seq)]")],
    ),
    Mistake(
        "left-padding",
        "pad_batch puts the padding before each sentence",
        concept="padding goes after a sentence's end, where no LSTM reads it before a word",
        caught_by="test_pad_batch_pads_at_the_end",
        edits=[Edit("pad_batch", "ids[: len(seq), column]",
                    "ids[int(lengths.max()) - len(seq) :, column]")],
    ),
]
