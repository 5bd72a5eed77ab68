"""Section 3 (bilm): mistakes in the biLM's directions, layers and padding."""

from tools.mistakes import Edit, Mistake

MISTAKES = [
    Mistake(
        "batch-reversed-as-a-whole",
        "the backward LSTM reads the padded batch flipped as a whole (tokens.flip(0))",
        concept="reverse each sentence within its own length, so padding stays at the end",
        caught_by="test_padded_batch_equals_one_sentence_at_a_time",
        edits=[Edit("BiLM.forward", "reverse_within_lengths(tokens, lengths)", "tokens.flip(0)"),
               Edit("BiLM.forward", "reverse_within_lengths(h, lengths)", "h.flip(0)")],
    ),
    Mistake(
        "backward-not-re-reversed",
        "the backward LSTM's outputs are used in reversed order, not reversed back",
        concept="position t of the backward states must describe token t",
        caught_by="test_backward_direction_never_sees_the_token_it_predicts",
        edits=[Edit("BiLM.forward", "[reverse_within_lengths(h, lengths) for h in reversed_states]",
                    "reversed_states")],
    ),
    Mistake(
        "one-head-over-both-directions",
        "one softmax head over [h_fwd; h_bwd] predicts both the next and the previous token",
        concept="each direction predicts from its own states only, or the target leaks",
        caught_by="test_forward_direction_never_sees_the_token_it_predicts",
        edits=[
            Edit("BiLM.__init__", "self.forward_head = nn.Linear(hidden_dim, vocab_size)",
                 "self.forward_head = nn.Linear(2 * hidden_dim, vocab_size)"),
            Edit("BiLM.forward", """
                forward_logits=self.forward_head(forward_states[-1]),
                backward_logits=self.backward_head(backward_states[-1]),
            """, """
                forward_logits=self.forward_head(layers[-1]),
                backward_logits=self.forward_head(layers[-1]),
            """),
        ],
    ),
    Mistake(
        "backward-uses-forward-lstms",
        "the backward direction runs the forward LSTM stack (a copy-paste slip)",
        concept="the two directions are separate LSTMs, each trained by its own loss",
        caught_by="test_every_parameter_is_used",
        edits=[Edit("BiLM.forward", "self.backward_lstms, reverse_within_lengths",
                    "self.forward_lstms, reverse_within_lengths")],
    ),
    Mistake(
        "layers-not-stacked",
        "every LSTM layer reads the token representation instead of the layer below",
        concept="layer j + 1 reads layer j's outputs: that is what makes it deeper",
        caught_by="test_each_layer_reads_the_layer_below",
        edits=[Edit("BiLM._run_stack", "layer_input = layer_output\n", "")],
    ),
    Mistake(
        "padding-not-zeroed",
        "the layers keep whatever the LSTMs computed at padded positions",
        concept="padded positions carry no representation: zero",
        caught_by="test_padded_batch_equals_one_sentence_at_a_time",
        edits=[Edit("BiLM.forward", "layers=torch.stack(layers) * mask,",
                    "layers=torch.stack(layers),")],
    ),
    Mistake(
        "layer-0-half-empty",
        "layer 0 is [p; 0]: the token representation padded with zeros to 512",
        concept="layer 0 is the token representation duplicated, [p; p]",
        caught_by="test_layer_0_is_the_projected_token_twice",
        edits=[Edit("BiLM.forward", "torch.cat([tokens, tokens], dim=-1)",
                    "torch.cat([tokens, torch.zeros_like(tokens)], dim=-1)")],
    ),
]
