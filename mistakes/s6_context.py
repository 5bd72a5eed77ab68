"""Section 6 (context): mistakes in the cosine similarity and in choosing what to compare."""

from tools.mistakes import Alternative, Edit, Mistake

# The code a learner writes in each function the mistakes below edit: the reference's, as
# it was when they were written. A mistake edits this copy, and the edited code replaces
# the function's whole marked block, so that a refactor of solutions/ leaves it as it is.
LEARNER_CODE = {
    "cosine_sim": """
    a, b = a.double(), b.double()  # float32 squares of large components overflow
    a_norm = torch.linalg.vector_norm(a, dim=-1, keepdim=True)
    b_norm = torch.linalg.vector_norm(b, dim=-1, keepdim=True)
    # Normalise first, then take the dot product: a zero vector stays zero instead of 0/0.
    a_unit = torch.where(a_norm > 0, a / a_norm.clamp_min(1e-300), 0.0)
    b_unit = torch.where(b_norm > 0, b / b_norm.clamp_min(1e-300), 0.0)
    return (a_unit * b_unit).sum(dim=-1).clamp(-1.0, 1.0).float()
    """,
    "compare_contexts": """
    sentences = [sentence for sentence, _, _ in labels]
    positions = [tokenize(sentence).index(word) for sentence, word, _ in labels]
    embeddings = get_elmo_embeddings(model, sentences, word2idx)
    targets = [emb[:, pos].cpu() for emb, pos in zip(embeddings, positions, strict=True)]
    if centre:
        shared = torch.stack(targets).mean(dim=0)  # (num_layers, D), over every sentence
        targets = [target - shared for target in targets]
    pairs, rows = [], []
    for word in dict.fromkeys(word for _, word, _ in labels):
        having = [i for i, (_, w, _) in enumerate(labels) if w == word]
        for i, j in itertools.combinations(having, 2):
            pairs.append(SentencePair(word, i, j, labels[i][2] == labels[j][2]))
            rows.append(cosine_sim(targets[i], targets[j]))  # (num_layers,)
    return ContextComparison(tuple(sentences), tuple(pairs), torch.stack(rows))
    """,
}

COSINE = "return (a_unit * b_unit).sum(dim=-1).clamp(-1.0, 1.0).float()"

MISTAKES = [
    Mistake(
        "centred-by-each-word-alone",
        "with centre=True, each target word is centred by the mean of its own occurrences",
        caught_by="test_centred_similarity_takes_out_the_mean_of_every_target_word",
        edits=[Edit("compare_contexts", "targets = [target - shared for target in targets]",
                    "targets = [target - torch.stack([t for t, (_, w, _) in zip(targets, labels)"
                    " if w == word]).mean(dim=0) for target, (_, word, _) in zip(targets, labels)"
                    "]")],
    ),
    Mistake(
        "cosine-without-normalisation",
        "cosine_sim returns the dot product of the two vectors, without dividing by the norms",
        caught_by="test_cosine_ignores_scale_and_flips_with_sign",
        edits=[Edit("cosine_sim", "(a_unit * b_unit).sum(dim=-1)", "(a * b).sum(dim=-1)")],
    ),
    Mistake(
        "zero-vector-nan",
        "cosine_sim divides by the norms unguarded, so a zero vector gives 0/0 = nan",
        caught_by="test_zero_vector_has_similarity_zero",
        edits=[Edit("cosine_sim", """
            a_unit = torch.where(a_norm > 0, a / a_norm.clamp_min(1e-300), 0.0)
            b_unit = torch.where(b_norm > 0, b / b_norm.clamp_min(1e-300), 0.0)
        """, """
            a_unit = a / a_norm
            b_unit = b / b_norm
        """)],
    ),
    Mistake(
        "cosine-of-whole-tensors",
        "cosine_sim sums over every axis, so a batch of vectors gives one number",
        caught_by="test_a_batch_gives_each_row_its_own_cosine",
        edits=[Edit("cosine_sim", COSINE,
                    "return ((a * b).sum() / (a.norm() * b.norm())).float()")],
    ),
    Mistake(
        "cosine-summed-over-the-first-axis",
        "cosine_sim sums the products over axis 0",
        caught_by="test_a_batch_gives_each_row_its_own_cosine",
        edits=[Edit("cosine_sim", "(a_unit * b_unit).sum(dim=-1)", "(a_unit * b_unit).sum(dim=0)")],
    ),
    Mistake(
        "cosine-as-a-python-float",
        "cosine_sim returns .item() of the result",
        caught_by="test_cosine_matches_the_definition",
        edits=[Edit("cosine_sim", COSINE,
                    "return (a_unit * b_unit).sum(dim=-1).clamp(-1.0, 1.0).item()")],
    ),
    Mistake(
        "pairs-with-itself",
        "compare_contexts pairs every sentence with itself too (combinations_with_replacement)",
        caught_by="test_every_pair_of_sentences_with_one_target_word",
        edits=[Edit("compare_contexts", "itertools.combinations(having, 2)",
                    "itertools.combinations_with_replacement(having, 2)")],
    ),
    Mistake(
        "pairs-across-words",
        "compare_contexts pairs every two sentences, whatever their target words",
        caught_by="test_every_pair_of_sentences_with_one_target_word",
        edits=[Edit("compare_contexts", "itertools.combinations(having, 2)",
                    "itertools.combinations(range(len(labels)), 2)")],
    ),
    Mistake(
        "same-sense-by-word",
        "compare_contexts compares the target words, not the senses, to tell same-sense pairs",
        caught_by="test_every_pair_of_sentences_with_one_target_word",
        edits=[Edit("compare_contexts", "labels[i][2] == labels[j][2]",
                    "labels[i][1] == labels[j][1]")],
    ),
    Mistake(
        "sentence-mean-not-target-word",
        "compare_contexts compares the mean of each sentence's embeddings, not the target word's",
        caught_by="test_similarity_is_the_cosine_of_the_target_words_embeddings",
        edits=[Edit("compare_contexts", "emb[:, pos].cpu()", "emb.mean(dim=1).cpu()")],
    ),
    Mistake(
        "last-occurrence",
        "compare_contexts takes the target word's last occurrence in its sentence",
        caught_by="test_a_target_word_twice_is_compared_at_its_first_occurrence",
        edits=[Edit("compare_contexts",
                    "[tokenize(sentence).index(word) for sentence, word, _ in labels]",
                    "[len(tokenize(sentence)) - 1 - tokenize(sentence)[::-1].index(word)"
                    " for sentence, word, _ in labels]")],
    ),
    Mistake(
        "similarity-of-the-top-layer-only",
        "compare_contexts compares the target word's top layer only",
        caught_by="test_every_pair_of_sentences_with_one_target_word",
        edits=[Edit("compare_contexts", "cosine_sim(targets[i], targets[j])",
                    "cosine_sim(targets[i][-1:], targets[j][-1:])")],
    ),
    Mistake(
        "target-found-by-str-split",
        "compare_contexts finds the target word with sentence.split().index(word)",
        caught_by="test_the_target_is_found_among_the_words_tokenize_gives",
        edits=[Edit("compare_contexts", "tokenize(sentence).index(word)",
                    "sentence.split().index(word)")],
    ),
]


ALTERNATIVES = [
    Alternative(
        "target-found-word-by-word",
        "compare_contexts walks the sentence's tokenize words to the first that is the target",
        edits=[Edit("compare_contexts", "tokenize(sentence).index(word)",
                    "next(i for i, w in enumerate(tokenize(sentence)) if w == word)")],
    ),
    Alternative(
        "torch-cosine-similarity",
        "cosine_sim is torch.nn.functional.cosine_similarity along the last axis, in float32",
        edits=[Edit("cosine_sim", """
            a, b = a.double(), b.double()  # float32 squares of large components overflow
            a_norm = torch.linalg.vector_norm(a, dim=-1, keepdim=True)
            b_norm = torch.linalg.vector_norm(b, dim=-1, keepdim=True)
            # Normalise first, then take the dot product: a zero vector stays zero instead of 0/0.
            a_unit = torch.where(a_norm > 0, a / a_norm.clamp_min(1e-300), 0.0)
            b_unit = torch.where(b_norm > 0, b / b_norm.clamp_min(1e-300), 0.0)
        """, ""), Edit("cosine_sim", COSINE,
                       "return torch.nn.functional.cosine_similarity(a, b, dim=-1)")],
    ),
    Alternative(
        "comparison-by-nested-loops",
        "compare_contexts loops over i < j and finds the target word with tokenize",
        edits=[Edit("compare_contexts", """
            positions = [tokenize(sentence).index(word) for sentence, word, _ in labels]
            embeddings = get_elmo_embeddings(model, sentences, word2idx)
            targets = [emb[:, pos].cpu() for emb, pos in zip(embeddings, positions, strict=True)]
            if centre:
                shared = torch.stack(targets).mean(dim=0)  # (num_layers, D), over every sentence
                targets = [target - shared for target in targets]
            pairs, rows = [], []
            for word in dict.fromkeys(word for _, word, _ in labels):
                having = [i for i, (_, w, _) in enumerate(labels) if w == word]
                for i, j in itertools.combinations(having, 2):
                    pairs.append(SentencePair(word, i, j, labels[i][2] == labels[j][2]))
                    rows.append(cosine_sim(targets[i], targets[j]))  # (num_layers,)
            return ContextComparison(tuple(sentences), tuple(pairs), torch.stack(rows))
        """, """
            embeddings = get_elmo_embeddings(model, sentences, word2idx)
            shared = torch.stack([e[:, tokenize(s).index(w)] for e, (s, w, _) in
                                  zip(embeddings, labels, strict=True)]).mean(dim=0) * centre
            pairs, rows = [], []
            for word in dict.fromkeys(w for _, w, _ in labels):
                for i in range(len(labels)):
                    for j in range(i + 1, len(labels)):
                        if labels[i][1] == labels[j][1] == word:
                            a = embeddings[i][:, tokenize(labels[i][0]).index(word)] - shared
                            b = embeddings[j][:, tokenize(labels[j][0]).index(word)] - shared
                            pairs.append(SentencePair(word, i, j, labels[i][2] == labels[j][2]))
                            rows.append(cosine_sim(a, b))
            return ContextComparison(tuple(sentences), tuple(pairs), torch.stack(rows).cpu())
        """)],
    ),
    Alternative(
        "cosine-by-normalize",
        "cosine_sim normalises each vector with torch.nn.functional.normalize, in float64",
        edits=[Edit("cosine_sim", """
            a, b = a.double(), b.double()  # float32 squares of large components overflow
            a_norm = torch.linalg.vector_norm(a, dim=-1, keepdim=True)
            b_norm = torch.linalg.vector_norm(b, dim=-1, keepdim=True)
            # Normalise first, then take the dot product: a zero vector stays zero instead of 0/0.
            a_unit = torch.where(a_norm > 0, a / a_norm.clamp_min(1e-300), 0.0)
            b_unit = torch.where(b_norm > 0, b / b_norm.clamp_min(1e-300), 0.0)
        """, """
            a_unit = torch.nn.functional.normalize(a.double(), dim=-1, eps=1e-300)
            b_unit = torch.nn.functional.normalize(b.double(), dim=-1, eps=1e-300)
        """)],
    ),
]
