"""Section 5 (extract): mistakes in running the biLM to extract ELMo embeddings."""

import textwrap

from tools.mistakes import Alternative, Edit, Mistake

# The code a learner writes in each function the mistakes below edit: the reference's, as
# it was when they were written. A mistake edits this copy, and the edited code replaces
# the function's whole marked block, so that a refactor of solutions/ leaves it as it is.
LEARNER_CODE = {
    "get_elmo_embeddings": """
    first = 1 if boundaries else 0  # the position of word 1
    ids, lengths = pad_batch([[BOS, *w, EOS] if boundaries else w for w in word_ids])
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            layers = model(ids.to(device), lengths).layers  # (L + 1, T, B, D)
    finally:
        model.train(was_training)
    embeddings = [layers[:, first : first + len(w), b] for b, w in enumerate(word_ids)]
    return embeddings[0] if single else embeddings
    """,
}

ROWS = "layers[:, first : first + len(w), b]"
# The biLM run in eval mode, without gradients, and the mode put back.
RUN = """
was_training = model.training
model.eval()
try:
    with torch.no_grad():
        layers = model(ids.to(device), lengths).layers  # (L + 1, T, B, D)
finally:
    model.train(was_training)
"""

MISTAKES = [
    Mistake(
        "extracted-in-training-mode",
        "get_elmo_embeddings runs the biLM without calling model.eval()",
        caught_by="test_runs_in_eval_mode_without_gradients",
        edits=[Edit("get_elmo_embeddings", "model.eval()\n", "")],
    ),
    Mistake(
        "extracted-with-gradients",
        "get_elmo_embeddings runs the biLM outside torch.no_grad()",
        caught_by="test_runs_in_eval_mode_without_gradients",
        edits=[Edit("get_elmo_embeddings", """
            with torch.no_grad():
                layers = model(ids.to(device), lengths).layers  # (L + 1, T, B, D)
        """, """
            layers = model(ids.to(device), lengths).layers
        """)],
    ),
    Mistake(
        "left-in-eval-mode",
        "get_elmo_embeddings calls model.eval() and never puts the model back",
        caught_by="test_leaves_the_model_in_the_mode_it_found",
        edits=[Edit("get_elmo_embeddings", RUN, textwrap.dedent("""
            model.eval()
            with torch.no_grad():
                layers = model(ids.to(device), lengths).layers
        """))],
    ),
    Mistake(
        "always-back-to-training-mode",
        "get_elmo_embeddings ends with model.train(), whatever mode the model was in",
        caught_by="test_leaves_the_model_in_the_mode_it_found",
        edits=[Edit("get_elmo_embeddings", "model.train(was_training)", "model.train()")],
    ),
    Mistake(
        "no-boundaries-fed",
        "get_elmo_embeddings runs the biLM on the words alone, without <s> and </s>",
        caught_by="test_rows_are_the_words_read_between_boundaries",
        edits=[Edit("get_elmo_embeddings", "[BOS, *w, EOS] if boundaries else w for w",
                    "w for w"),
               Edit("get_elmo_embeddings", ROWS, "layers[:, : len(w), b]")],
    ),
    Mistake(
        "only-bos-fed",
        "get_elmo_embeddings feeds <s> w_1 .. w_n, without the </s> the backward LM starts from",
        caught_by="test_rows_are_the_words_read_between_boundaries",
        edits=[Edit("get_elmo_embeddings", "[BOS, *w, EOS] if", "[BOS, *w] if")],
    ),
    Mistake(
        "boundaries-kept-off-by-one",
        "the rows are taken from position 0, so <s> is kept and the last word is lost",
        caught_by="test_rows_are_the_words_read_between_boundaries",
        edits=[Edit("get_elmo_embeddings", ROWS, "layers[:, : len(w), b]")],
    ),
    Mistake(
        "padding-rows-kept",
        "every sentence of a batch gets the batch's padded length, padding rows included",
        caught_by="test_batch_gives_one_tensor_per_sentence",
        edits=[Edit("get_elmo_embeddings", ROWS, "layers[:, 1:-1, b]")],
    ),
    Mistake(
        "extraction-without-lengths",
        "get_elmo_embeddings runs the biLM on the padded batch without its lengths",
        caught_by="test_batch_equals_one_at_a_time",
        edits=[Edit("get_elmo_embeddings", "model(ids.to(device), lengths)",
                    "model(ids.to(device))")],
    ),
    Mistake(
        "top-layer-only",
        "get_elmo_embeddings returns the top layer alone",
        caught_by="test_one_sentence_gives_three_layers_per_word",
        edits=[Edit("get_elmo_embeddings", ROWS, "layers[-1, first : first + len(w), b]")],
    ),
    Mistake(
        "layer-0-dropped",
        "get_elmo_embeddings returns the LSTM layers only, without the token layer",
        caught_by="test_one_sentence_gives_three_layers_per_word",
        edits=[Edit("get_elmo_embeddings", ROWS, "layers[1:, first : first + len(w), b]")],
    ),
    Mistake(
        "one-sentence-as-a-list",
        "get_elmo_embeddings returns a list of one tensor for one sentence",
        caught_by="test_one_sentence_gives_three_layers_per_word",
        edits=[Edit("get_elmo_embeddings", "return embeddings[0] if single else embeddings",
                    "return embeddings")],
    ),
    Mistake(
        "layers-concatenated",
        "get_elmo_embeddings concatenates the layers of each word into one 1536-d vector",
        caught_by="test_one_sentence_gives_three_layers_per_word",
        edits=[Edit("get_elmo_embeddings", ROWS, f"torch.cat(list({ROWS}), dim=-1)")],
    ),
    Mistake(
        "extraction-under-inference-mode",
        "get_elmo_embeddings runs the biLM under torch.inference_mode() for speed",
        caught_by="test_section_7_can_train_on_the_embeddings",
        edits=[Edit("get_elmo_embeddings", "torch.no_grad()", "torch.inference_mode()")],
    ),
    Mistake(
        "ids-left-on-the-cpu",
        "get_elmo_embeddings feeds the biLM the ids on the CPU, wherever the model is",
        caught_by="test_the_ids_go_to_the_models_device",
        edits=[Edit("get_elmo_embeddings", "model(ids.to(device), lengths)",
                    "model(ids, lengths)")],
    ),
]


ALTERNATIVES = [
    Alternative(
        "one-sentence-at-a-time",
        "get_elmo_embeddings runs the biLM on each sentence alone, its ids made on the model's "
        "device",
        edits=[Edit("get_elmo_embeddings", f"""
            ids, lengths = pad_batch([[BOS, *w, EOS] if boundaries else w for w in word_ids])
            device = next(model.parameters()).device
            {RUN.strip().replace(chr(10), chr(10) + " " * 12)}
            embeddings = [layers[:, first : first + len(w), b] for b, w in enumerate(word_ids)]
        """, """
            device = next(model.parameters()).device
            was_training = model.training
            model.eval()
            embeddings = []
            try:
                with torch.no_grad():
                    for w in word_ids:
                        read = [BOS, *w, EOS] if boundaries else w
                        ids = torch.tensor(read, device=device).unsqueeze(1)
                        embeddings.append(model(ids).layers[:, first : first + len(w), 0])
            finally:
                model.train(was_training)
        """)],
    ),
    Alternative(
        "rows-cut-by-the-lengths",
        "each sentence's rows are cut with the padded batch's lengths, from 1 to length - 1",
        edits=[Edit("get_elmo_embeddings",
                    "[layers[:, first : first + len(w), b] for b, w in enumerate(word_ids)]",
                    "[layers[:, first : int(n) - first, b] for b, n in enumerate(lengths)]")],
    ),
    Alternative(
        "extraction-with-grad-disabled",
        "get_elmo_embeddings turns gradients off with torch.set_grad_enabled(False)",
        edits=[Edit("get_elmo_embeddings", "torch.no_grad()", "torch.set_grad_enabled(False)")],
    ),
]
