"""Section 6 (context): mistakes in the cosine similarity and in choosing what to compare."""

from tools.mistakes import Edit, Mistake

MISTAKES = [
    Mistake(
        "cosine-without-normalisation",
        "cosine_sim returns the dot product of the two vectors, without dividing by the norms",
        concept="cosine similarity compares directions: it ignores the vectors' lengths",
        caught_by="test_cosine_ignores_scale_and_flips_with_sign",
        edits=[Edit("cosine_sim", "(a_unit * b_unit).sum(dim=-1)", "(a * b).sum(dim=-1)")],
    ),
    Mistake(
        "zero-vector-nan",
        "cosine_sim divides by the norms unguarded, so a zero vector gives 0/0 = nan",
        concept="a zero vector is similar to nothing: cos(0, b) = 0, never nan",
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
        "pairs-with-itself",
        "compare_contexts pairs every sentence with itself too (combinations_with_replacement)",
        concept="a pair is two different sentences: a sentence compared with itself says nothing",
        caught_by="test_every_pair_of_sentences_with_one_target_word",
        edits=[Edit("compare_contexts", "itertools.combinations(having, 2)",
                    "itertools.combinations_with_replacement(having, 2)")],
    ),
    Mistake(
        "sentence-mean-not-target-word",
        "compare_contexts compares the mean of each sentence's embeddings, not the target word's",
        concept="the comparison is of one word's embeddings in two contexts",
        caught_by="test_similarity_is_the_cosine_of_the_target_words_embeddings",
        edits=[Edit("compare_contexts", "emb[:, pos].cpu()", "emb.mean(dim=1).cpu()")],
    ),
]
