"""Section 4 (pretrain): mistakes in the biLM loss and the training loop."""

from tools.mistakes import Edit, Mistake

MISTAKES = [
    Mistake(
        "backward-targets-shifted",
        "the backward logits are scored against the next token, like the forward ones",
        concept="backward logits at t predict token t-1; forward logits at t predict t+1",
        caught_by="test_loss_is_forward_plus_backward_cross_entropy",
        edits=[Edit("bilm_loss", """
            output.backward_logits[1:].reshape(-1, vocab), backward_targets.reshape(-1),
        """, """
            output.backward_logits[:-1].reshape(-1, vocab), forward_targets.reshape(-1),
        """)],
    ),
    Mistake(
        "padding-counted",
        "cross_entropy without ignore_index: <pad> is a target like any other",
        concept="padding is not text: it never counts in the loss",
        caught_by="test_padding_never_counts_in_the_loss",
        edits=[Edit("bilm_loss", """
            output.forward_logits[:-1].reshape(-1, vocab), forward_targets.reshape(-1),
            ignore_index=PAD,
        """, """
            output.forward_logits[:-1].reshape(-1, vocab), forward_targets.reshape(-1),
        """), Edit("bilm_loss", """
            output.backward_logits[1:].reshape(-1, vocab), backward_targets.reshape(-1),
            ignore_index=PAD,
        """, """
            output.backward_logits[1:].reshape(-1, vocab), backward_targets.reshape(-1),
        """)],
    ),
    Mistake(
        "padded-position-predicts-eos",
        "the backward targets are not masked, so the padded position after </s> predicts it",
        concept="a prediction counts only when both its position and its target are real",
        caught_by="test_padding_never_counts_in_the_loss",
        edits=[Edit("bilm_loss", "ids[:-1].masked_fill(~valid[1:], PAD)", "ids[:-1]")],
    ),
    Mistake(
        "directions-averaged",
        "the loss is the mean of the two directions' cross-entropies",
        concept="the loss is forward CE + backward CE, their sum",
        caught_by="test_loss_is_forward_plus_backward_cross_entropy",
        edits=[Edit("bilm_loss", "return forward + backward", "return (forward + backward) / 2")],
    ),
    Mistake(
        "forgot-zero-grad",
        "train_bilm never calls optimizer.zero_grad(), so gradients pile up across steps",
        concept="each step follows the gradient of its own batch only",
        caught_by="test_each_step_is_one_adam_step_on_a_fresh_gradient",
        edits=[Edit("train_bilm", "optimizer.zero_grad()\n", "")],
    ),
    Mistake(
        "learning-rate-ignored",
        "train_bilm builds Adam with the seed notebook's lr=0.001 whatever the recipe says",
        concept="the recipe decides the learning rate",
        caught_by="test_each_step_is_one_adam_step_on_a_fresh_gradient",
        edits=[Edit("train_bilm", "lr=recipe.lr", "lr=0.001")],
    ),
    Mistake(
        "history-per-batch",
        "train_bilm records the corpus loss after every batch, not after every epoch",
        concept="the history holds one corpus loss per epoch",
        caught_by="test_history_has_one_loss_per_epoch",
        edits=[Edit("train_bilm", """
                optimizer.step()
            history.append(corpus_loss(model, corpus, word2idx))
        """, """
                optimizer.step()
                history.append(corpus_loss(model, corpus, word2idx))
        """)],
    ),
]
