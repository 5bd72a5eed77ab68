"""Section 5 (extract): mistakes in running the biLM to extract ELMo embeddings."""

from tools.mistakes import Edit, Mistake

MISTAKES = [
    Mistake(
        "extracted-in-training-mode",
        "get_elmo_embeddings runs the biLM without calling model.eval()",
        concept="embeddings come from the biLM in eval mode",
        caught_by="test_runs_in_eval_mode_without_gradients",
        edits=[Edit("get_elmo_embeddings", "model.eval()\n", "")],
    ),
    Mistake(
        "extracted-with-gradients",
        "get_elmo_embeddings runs the biLM outside torch.no_grad()",
        concept="extraction builds no autograd graph: the biLM is frozen",
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
        concept="extraction leaves the model in the mode it found it in",
        caught_by="test_leaves_the_model_in_the_mode_it_found",
        edits=[Edit("get_elmo_embeddings", """
            was_training = model.training
            model.eval()
            try:
                with torch.no_grad():
                    layers = model(ids.to(device), lengths).layers  # (L + 1, T, B, D)
            finally:
                model.train(was_training)
        """, """
            model.eval()
            with torch.no_grad():
                layers = model(ids.to(device), lengths).layers
        """)],
    ),
    Mistake(
        "boundaries-kept-off-by-one",
        "the rows are taken from position 0, so <s> is kept and the last word is lost",
        concept="row i is word i: <s> and </s> are stripped",
        caught_by="test_row_i_is_word_i",
        edits=[Edit("get_elmo_embeddings", "layers[:, 1 : 1 + len(w), b]",
                    "layers[:, : len(w), b]")],
    ),
    Mistake(
        "padding-rows-kept",
        "every sentence of a batch gets the batch's padded length, padding rows included",
        concept="each sentence gets one row per word of its own, whatever the batch",
        caught_by="test_batch_gives_one_tensor_per_sentence",
        edits=[Edit("get_elmo_embeddings", "layers[:, 1 : 1 + len(w), b]", "layers[:, 1:-1, b]")],
    ),
]
