"""Section 4 (pretrain): mistakes in the biLM loss and the training loop."""

from tools.mistakes import Alternative, Edit, Mistake

# The code a learner writes in each function the mistakes below edit: the reference's, as
# it was when they were written. A mistake edits this copy, and the edited code replaces
# the function's whole marked block, so that a refactor of solutions/ leaves it as it is.
LEARNER_CODE = {
    "bilm_loss": """
    steps = torch.arange(ids.shape[0], device=ids.device).unsqueeze(1)
    valid = steps < lengths.to(ids.device).unsqueeze(0)  # (T, B)
    # Position t predicts t+1 (forward) and t-1 (backward); both ends must be real tokens.
    forward_targets = ids[1:].masked_fill(~valid[1:], PAD)
    backward_targets = ids[:-1].masked_fill(~valid[1:], PAD)
    vocab = output.forward_logits.shape[-1]
    forward = F.cross_entropy(
        output.forward_logits[:-1].reshape(-1, vocab), forward_targets.reshape(-1),
        ignore_index=PAD,
    )
    backward = F.cross_entropy(
        output.backward_logits[1:].reshape(-1, vocab), backward_targets.reshape(-1),
        ignore_index=PAD,
    )
    return forward + backward
    """,
    "train_bilm": """
    device = get_device(device)
    model.to(device).train()
    set_seed(seed)
    shuffler = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=recipe.lr)
    history: list[float] = []
    bar = progress_bar(recipe.epochs, progress)
    for epoch in bar:
        order = torch.randperm(len(sentences), generator=shuffler).tolist()
        for start in range(0, len(order), recipe.batch_size):
            batch = [sentences[i] for i in order[start : start + recipe.batch_size]]
            ids, lengths = pad_batch(batch)
            ids = ids.to(device)
            optimizer.zero_grad()
            loss = bilm_loss(model(ids, lengths), ids, lengths)
            loss.backward()
            optimizer.step()
        history.append(corpus_loss(model, corpus, word2idx))
        show_loss(bar, epoch, history[-1], log_every)
    return history
    """,
}

SHUFFLE = "torch.randperm(len(sentences), generator=shuffler).tolist()"
ADAM = "torch.optim.Adam(model.parameters(), lr=recipe.lr)"
EPOCH_START = f"""
for epoch in bar:
    order = {SHUFFLE}
"""

MISTAKES = [
    Mistake(
        "backward-targets-shifted",
        "the backward logits are scored against the next token, like the forward ones",
        caught_by="test_loss_is_forward_plus_backward_cross_entropy",
        edits=[Edit("bilm_loss", """
            output.backward_logits[1:].reshape(-1, vocab), backward_targets.reshape(-1),
        """, """
            output.backward_logits[:-1].reshape(-1, vocab), forward_targets.reshape(-1),
        """)],
    ),
    Mistake(
        "forward-predicts-the-current-token",
        "the forward logits at t are scored against token t, not token t + 1",
        caught_by="test_loss_is_forward_plus_backward_cross_entropy",
        edits=[Edit("bilm_loss", "output.forward_logits[:-1].reshape(-1, vocab)",
                    "output.forward_logits[1:].reshape(-1, vocab)")],
    ),
    Mistake(
        "padding-counted",
        "cross_entropy without ignore_index: <pad> is a target like any other",
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
        caught_by="test_padding_never_counts_in_the_loss",
        edits=[Edit("bilm_loss", "ids[:-1].masked_fill(~valid[1:], PAD)", "ids[:-1]")],
    ),
    Mistake(
        "padding-target-counted",
        "the forward predictions are masked by their position alone, so </s> of a shorter "
        "sentence is scored against the <pad> after it",
        caught_by="test_a_sentence_s_last_token_predicts_no_padding",
        edits=[Edit("bilm_loss", "ids[1:].masked_fill(~valid[1:], PAD)",
                    "ids[1:].masked_fill(~valid[:-1], -100)"),
               Edit("bilm_loss", """
            output.forward_logits[:-1].reshape(-1, vocab), forward_targets.reshape(-1),
            ignore_index=PAD,
        """, """
            output.forward_logits[:-1].reshape(-1, vocab), forward_targets.reshape(-1),
            ignore_index=-100,
        """)],
    ),
    Mistake(
        "directions-averaged",
        "the loss is the mean of the two directions' cross-entropies",
        caught_by="test_loss_is_forward_plus_backward_cross_entropy",
        edits=[Edit("bilm_loss", "return forward + backward", "return (forward + backward) / 2")],
    ),
    Mistake(
        "loss-summed-over-tokens",
        "cross_entropy with reduction='sum': each direction's loss grows with the batch",
        caught_by="test_loss_is_forward_plus_backward_cross_entropy",
        edits=[Edit("bilm_loss", """
            output.forward_logits[:-1].reshape(-1, vocab), forward_targets.reshape(-1),
            ignore_index=PAD,
        """, """
            output.forward_logits[:-1].reshape(-1, vocab), forward_targets.reshape(-1),
            ignore_index=PAD, reduction="sum",
        """), Edit("bilm_loss", """
            output.backward_logits[1:].reshape(-1, vocab), backward_targets.reshape(-1),
            ignore_index=PAD,
        """, """
            output.backward_logits[1:].reshape(-1, vocab), backward_targets.reshape(-1),
            ignore_index=PAD, reduction="sum",
        """)],
    ),
    Mistake(
        "loss-positions-on-the-cpu",
        "bilm_loss makes its position indices on the CPU, whatever the ids' device",
        caught_by="test_the_loss_works_on_the_device_of_its_input",
        edits=[Edit("bilm_loss", "torch.arange(ids.shape[0], device=ids.device)",
                    "torch.arange(ids.shape[0])")],
    ),
    Mistake(
        "forgot-zero-grad",
        "train_bilm never calls optimizer.zero_grad(), so gradients pile up across steps",
        caught_by="test_one_optimizer_follows_each_batchs_own_gradient",
        edits=[Edit("train_bilm", "optimizer.zero_grad()\n", "")],
    ),
    Mistake(
        "learning-rate-ignored",
        "train_bilm builds Adam with the seed notebook's lr=0.001 whatever the recipe says",
        caught_by="test_the_first_step_is_adam_with_the_recipes_learning_rate",
        edits=[Edit("train_bilm", "lr=recipe.lr", "lr=0.001")],
    ),
    Mistake(
        "adam-made-afresh-each-step",
        "train_bilm builds a new Adam optimizer for every batch",
        caught_by="test_one_optimizer_follows_each_batchs_own_gradient",
        edits=[Edit("train_bilm", "optimizer.zero_grad()\n",
                    "optimizer = torch.optim.Adam(model.parameters(), lr=recipe.lr)\n"
                    "optimizer.zero_grad()\n")],
    ),
    Mistake(
        "adam-made-afresh-each-epoch",
        "train_bilm builds a new Adam optimizer at the start of every epoch",
        caught_by="test_one_optimizer_lasts_across_epochs",
        edits=[Edit("train_bilm", f"optimizer = {ADAM}\n", ""),
               Edit("train_bilm", EPOCH_START, EPOCH_START.replace(
                   "    order", f"    optimizer = {ADAM}\n    order"))],
    ),
    Mistake(
        "adamw-by-habit",
        "train_bilm trains with torch.optim.AdamW, whose weight decay also shrinks every weight",
        caught_by="test_the_first_step_is_adam_with_the_recipes_learning_rate",
        edits=[Edit("train_bilm", "torch.optim.Adam(", "torch.optim.AdamW(")],
    ),
    Mistake(
        "no-optimizer-step",
        "train_bilm computes each batch's gradient but never calls optimizer.step()",
        caught_by="test_the_first_step_is_adam_with_the_recipes_learning_rate",
        edits=[Edit("train_bilm", "optimizer.step()\n", "")],
    ),
    Mistake(
        "gradients-cleared-before-the-step",
        "train_bilm calls optimizer.zero_grad() between loss.backward() and optimizer.step()",
        caught_by="test_the_first_step_is_adam_with_the_recipes_learning_rate",
        edits=[Edit("train_bilm", "optimizer.zero_grad()\n", ""),
               Edit("train_bilm", "loss.backward()\n", "loss.backward()\noptimizer.zero_grad()\n")],
    ),
    Mistake(
        "batch-left-on-the-cpu",
        "train_bilm moves the model to its device but leaves each padded batch on the CPU",
        caught_by="test_train_bilm_moves_each_batch_to_the_models_device",
        edits=[Edit("train_bilm", "ids = ids.to(device)\n", "")],
    ),
    Mistake(
        "lengths-not-passed",
        "train_bilm runs the biLM on a padded batch without its lengths",
        caught_by="test_the_first_step_is_adam_with_the_recipes_learning_rate",
        edits=[Edit("train_bilm", "bilm_loss(model(ids, lengths), ids, lengths)",
                    "bilm_loss(model(ids), ids, lengths)")],
    ),
    Mistake(
        "no-shuffling",
        "train_bilm visits the sentences in corpus order in every epoch",
        caught_by="test_every_epoch_has_a_new_order",
        edits=[Edit("train_bilm", SHUFFLE, "list(range(len(sentences)))")],
    ),
    Mistake(
        "one-order-for-every-epoch",
        "train_bilm shuffles the sentences once, before the first epoch",
        caught_by="test_every_epoch_has_a_new_order",
        edits=[Edit("train_bilm", EPOCH_START, f"order = {SHUFFLE}\nfor epoch in bar:\n")],
    ),
    Mistake(
        "shuffled-without-the-seed",
        "train_bilm shuffles with torch's global generator and never uses its seed",
        caught_by="test_the_seed_alone_decides_the_order",
        edits=[Edit("train_bilm", "set_seed(seed)\n", ""),
               Edit("train_bilm", SHUFFLE, "torch.randperm(len(sentences)).tolist()")],
    ),
    Mistake(
        "sentences-drawn-with-replacement",
        "train_bilm draws each epoch's sentences at random with replacement",
        caught_by="test_each_epoch_visits_every_sentence_once_in_batches",
        edits=[Edit("train_bilm", SHUFFLE,
                    "torch.randint(len(sentences), (len(sentences),), "
                    "generator=shuffler).tolist()")],
    ),
    Mistake(
        "last-batch-dropped",
        "train_bilm takes only full batches, so the sentences left over never train",
        caught_by="test_each_epoch_visits_every_sentence_once_in_batches",
        edits=[Edit("train_bilm", "range(0, len(order), recipe.batch_size)",
                    "range(0, len(order) - recipe.batch_size + 1, recipe.batch_size)")],
    ),
    Mistake(
        "history-per-batch",
        "train_bilm records the corpus loss after every batch, not after every epoch",
        caught_by="test_history_is_the_corpus_loss_after_each_epoch",
        edits=[Edit("train_bilm", """
                optimizer.step()
            history.append(corpus_loss(model, corpus, word2idx))
        """, """
                optimizer.step()
                history.append(corpus_loss(model, corpus, word2idx))
        """)],
    ),
    Mistake(
        "history-of-the-last-batch",
        "train_bilm records the training loss of each epoch's last batch",
        caught_by="test_history_is_the_corpus_loss_after_each_epoch",
        edits=[Edit("train_bilm", "history.append(corpus_loss(model, corpus, word2idx))",
                    "history.append(loss.item())")],
    ),
    Mistake(
        "history-of-tensors",
        "train_bilm records each epoch's last loss as a tensor",
        caught_by="test_history_is_the_corpus_loss_after_each_epoch",
        edits=[Edit("train_bilm", "history.append(corpus_loss(model, corpus, word2idx))",
                    "history.append(loss.detach())")],
    ),
    Mistake(
        "history-before-the-epoch",
        "train_bilm measures the corpus loss at the start of each epoch, before its steps",
        caught_by="test_history_is_the_corpus_loss_after_each_epoch",
        edits=[Edit("train_bilm", """
                history.append(corpus_loss(model, corpus, word2idx))
                show_loss(bar, epoch, history[-1], log_every)
            """, """
                show_loss(bar, epoch, history[-1], log_every)
            """),
               Edit("train_bilm", EPOCH_START, EPOCH_START.replace(
                   "order", "history.append(corpus_loss(model, corpus, word2idx))\n    order"))],
    ),
    Mistake(
        "training-mode-not-set",
        "train_bilm never calls model.train(), so a model handed over in eval mode stays so",
        caught_by="test_training_steps_run_in_training_mode_and_leave_it_so",
        edits=[Edit("train_bilm", "model.to(device).train()", "model.to(device)")],
    ),
    Mistake(
        "progress-bar-always-shown",
        "train_bilm shows its progress bar whatever `progress` says",
        caught_by="test_the_progress_bar_and_the_log",
        edits=[Edit("train_bilm", "progress_bar(recipe.epochs, progress)",
                    "progress_bar(recipe.epochs, True)")],
    ),
    Mistake(
        "device-argument-ignored",
        "train_bilm calls get_device() without its device argument",
        caught_by="test_the_device_argument_is_where_it_trains",
        edits=[Edit("train_bilm", "device = get_device(device)", "device = get_device()")],
    ),
]


ALTERNATIVES = [
    Alternative(
        "loss-by-boolean-masks",
        "bilm_loss selects the real (position, target) pairs with a boolean mask",
        edits=[Edit("bilm_loss", """
            forward_targets = ids[1:].masked_fill(~valid[1:], PAD)
            backward_targets = ids[:-1].masked_fill(~valid[1:], PAD)
            vocab = output.forward_logits.shape[-1]
            forward = F.cross_entropy(
                output.forward_logits[:-1].reshape(-1, vocab), forward_targets.reshape(-1),
                ignore_index=PAD,
            )
            backward = F.cross_entropy(
                output.backward_logits[1:].reshape(-1, vocab), backward_targets.reshape(-1),
                ignore_index=PAD,
            )
        """, """
            pairs = valid[1:]  # (T - 1, B): both the position and its target are real
            forward = F.cross_entropy(output.forward_logits[:-1][pairs], ids[1:][pairs])
            backward = F.cross_entropy(output.backward_logits[1:][pairs], ids[:-1][pairs])
        """)],
    ),
    Alternative(
        "batch-and-lengths-moved",
        "train_bilm moves the lengths to the model's device with the ids",
        edits=[Edit("train_bilm", "ids = ids.to(device)",
                    "ids, lengths = ids.to(device), lengths.to(device)")],
    ),
    Alternative(
        "shuffled-by-python-random",
        "train_bilm shuffles with random.Random(seed) and calls no set_seed",
        edits=[Edit("train_bilm", """
            set_seed(seed)
            shuffler = torch.Generator().manual_seed(seed)
        """, """
            import random

            shuffler = random.Random(seed)
        """), Edit("train_bilm", SHUFFLE,
                   "shuffler.sample(range(len(sentences)), len(sentences))")],
    ),
    Alternative(
        "model-zero-grad-and-own-log",
        "train_bilm clears the gradients through the model, before the backward pass, and "
        "prints the log itself",
        edits=[Edit("train_bilm", """
            optimizer.zero_grad()
            loss = bilm_loss(model(ids, lengths), ids, lengths)
        """, """
            loss = bilm_loss(model(ids, lengths), ids, lengths)
            model.zero_grad(set_to_none=True)
        """), Edit("train_bilm", """
            history.append(corpus_loss(model, corpus, word2idx))
            show_loss(bar, epoch, history[-1], log_every)
        """, """
            history.append(corpus_loss(model, corpus, word2idx))
            bar.set_postfix(loss=history[-1])
            if log_every and epoch % log_every == 0:
                print(f"epoch {epoch:3d}  loss {history[-1]:.4f}")
        """)],
    ),
]
