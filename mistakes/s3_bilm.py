"""Section 3 (bilm): mistakes in the biLM's parts, directions, layers and padding."""

from tools.mistakes import Alternative, Edit, Mistake

# The code a learner writes in each function the mistakes below edit: the reference's, as
# it was when they were written. A mistake edits this copy, and the edited code replaces
# the function's whole marked block, so that a refactor of solutions/ leaves it as it is.
LEARNER_CODE = {
    "reverse_within_lengths": """
    steps = torch.arange(x.shape[0], device=x.device).unsqueeze(1)  # (T, 1)
    lengths = lengths.to(x.device).unsqueeze(0)  # (1, B)
    source = torch.where(steps < lengths, lengths - 1 - steps, steps)  # (T, B)
    source = source.view(*source.shape, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(0, source)
    """,
    "BiLM.__init__": """
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=padding_idx)
        self.token_projection = nn.Linear(embedding_dim, hidden_dim)
        self.forward_lstms = nn.ModuleList(
            nn.LSTM(hidden_dim, hidden_dim) for _ in range(num_layers)
        )
        self.backward_lstms = nn.ModuleList(
            nn.LSTM(hidden_dim, hidden_dim) for _ in range(num_layers)
        )
        self.forward_head = nn.Linear(hidden_dim, vocab_size)
        self.backward_head = nn.Linear(hidden_dim, vocab_size)
        self.residual = residual
        """,
    "BiLM.forward": """
        mask = (torch.arange(ids.shape[0], device=ids.device).unsqueeze(1)
                < lengths.to(ids.device).unsqueeze(0)).unsqueeze(-1)  # (T, B, 1)
        tokens = self.token_projection(self.embedding(ids))  # (T, B, H)

        forward_states = self._run_stack(self.forward_lstms, tokens)
        reversed_states = self._run_stack(
            self.backward_lstms, reverse_within_lengths(tokens, lengths)
        )
        backward_states = [reverse_within_lengths(h, lengths) for h in reversed_states]

        layers = [torch.cat([tokens, tokens], dim=-1)]
        layers += [
            torch.cat([f, b], dim=-1)
            for f, b in zip(forward_states, backward_states, strict=True)
        ]
        return BiLMOutput(
            layers=torch.stack(layers) * mask,
            forward_logits=self.forward_head(forward_states[-1]),
            backward_logits=self.backward_head(backward_states[-1]),
        )
        """,
    "BiLM._run_stack": """
        outputs, layer_input = [], inputs
        for depth, lstm in enumerate(lstms):
            layer_output, _ = lstm(layer_input)  # zero initial state: no memory across calls
            if depth > 0 and self.residual:
                layer_output = layer_output + layer_input  # residual, as in the paper
            outputs.append(layer_output)
            layer_input = layer_output
        return outputs
        """,
}

FORWARD_STACK = """
self.forward_lstms = nn.ModuleList(
    nn.LSTM(hidden_dim, hidden_dim) for _ in range(num_layers)
)
"""
BACKWARD_STACK = FORWARD_STACK.replace("forward", "backward")
FORWARD_STACK_FROM_X = """
self.forward_lstms = nn.ModuleList(
    nn.LSTM(embedding_dim if i == 0 else hidden_dim, hidden_dim) for i in range(num_layers)
)
"""

MISTAKES = [
    Mistake(
        "lstms-in-a-plain-list",
        "the LSTMs of each direction are kept in a plain python list",
        caught_by="test_the_state_dict_holds_the_whole_model",
        edits=[Edit("BiLM.__init__", "self.forward_lstms = nn.ModuleList(",
                    "self.forward_lstms = list("),
               Edit("BiLM.__init__", "self.backward_lstms = nn.ModuleList(",
                    "self.backward_lstms = list(")],
    ),
    Mistake(
        "directions-share-lstms",
        "the backward direction is given the forward LSTM stack (one set of LSTMs for both)",
        caught_by="test_each_direction_has_its_own_parameters",
        edits=[Edit("BiLM.__init__", BACKWARD_STACK,
                    "self.backward_lstms = self.forward_lstms\n")],
    ),
    Mistake(
        "directions-share-a-head",
        "one softmax layer serves as the head of both directions",
        caught_by="test_each_direction_has_its_own_parameters",
        edits=[Edit("BiLM.__init__", "self.backward_head = nn.Linear(hidden_dim, vocab_size)",
                    "self.backward_head = self.forward_head")],
    ),
    Mistake(
        "one-multi-layer-lstm",
        "each direction is one nn.LSTM(num_layers=2), which returns its top layer only",
        caught_by="test_seed_key_shapes",
        edits=[Edit("BiLM.__init__", FORWARD_STACK, "self.forward_lstms = nn.ModuleList(["
                    "nn.LSTM(hidden_dim, hidden_dim, num_layers)])\n"),
               Edit("BiLM.__init__", BACKWARD_STACK, "self.backward_lstms = nn.ModuleList(["
                    "nn.LSTM(hidden_dim, hidden_dim, num_layers)])\n")],
    ),
    Mistake(
        "lstms-batch-first",
        "the LSTMs are made with batch_first=True, so each reads the time-major batch as T "
        "sequences of B steps: a word's states never see the other words of its sentence",
        caught_by="test_forward_direction_never_sees_the_token_it_predicts",
        edits=[Edit("BiLM.__init__", stack, stack.replace(
            "nn.LSTM(hidden_dim, hidden_dim)", "nn.LSTM(hidden_dim, hidden_dim, batch_first=True)"))
            for stack in (FORWARD_STACK, BACKWARD_STACK)],
    ),
    Mistake(
        "no-padding-idx",
        "the embedding is built without padding_idx",
        caught_by="test_pad_embedding_is_zero_and_stays_zero",
        edits=[Edit("BiLM.__init__",
                    "nn.Embedding(vocab_size, embedding_dim, padding_idx=padding_idx)",
                    "nn.Embedding(vocab_size, embedding_dim)")],
    ),
    Mistake(
        "lstms-read-the-embedding",
        "the first LSTMs read the word embedding x, not the projection p",
        caught_by="test_each_layer_reads_the_layer_below",
        edits=[Edit("BiLM.__init__", FORWARD_STACK, FORWARD_STACK_FROM_X),
               Edit("BiLM.__init__", BACKWARD_STACK, FORWARD_STACK_FROM_X.replace(
                   "forward", "backward")),
               Edit("BiLM.forward",
                    "tokens = self.token_projection(self.embedding(ids))  # (T, B, H)\n",
                    "embedded = self.embedding(ids)\ntokens = self.token_projection(embedded)\n"),
               Edit("BiLM.forward", "self._run_stack(self.forward_lstms, tokens)",
                    "self._run_stack(self.forward_lstms, embedded)"),
               Edit("BiLM.forward", "reverse_within_lengths(tokens, lengths)",
                    "reverse_within_lengths(embedded, lengths)")],
    ),
    Mistake(
        "batch-reversed-as-a-whole",
        "the backward LSTM reads the padded batch flipped as a whole (tokens.flip(0))",
        caught_by="test_padded_batch_equals_one_sentence_at_a_time",
        edits=[Edit("BiLM.forward", "reverse_within_lengths(tokens, lengths)", "tokens.flip(0)"),
               Edit("BiLM.forward", "reverse_within_lengths(h, lengths)", "h.flip(0)")],
    ),
    Mistake(
        "backward-not-re-reversed",
        "the backward LSTM's outputs are used in reversed order, not reversed back",
        caught_by="test_backward_direction_never_sees_the_token_it_predicts",
        edits=[Edit("BiLM.forward", "[reverse_within_lengths(h, lengths) for h in reversed_states]",
                    "reversed_states")],
    ),
    Mistake(
        "one-head-over-both-directions",
        "one softmax head over [h_fwd; h_bwd] predicts both the next and the previous token",
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
        "halves-swapped",
        "each layer is [backward; forward] instead of [forward; backward]",
        caught_by="test_forward_direction_never_sees_the_token_it_predicts",
        edits=[Edit("BiLM.forward", "torch.cat([f, b], dim=-1)", "torch.cat([b, f], dim=-1)")],
    ),
    Mistake(
        "backward-uses-forward-lstms",
        "the backward direction runs the forward LSTM stack (a copy-paste slip)",
        caught_by="test_every_parameter_is_used",
        edits=[Edit("BiLM.forward", "self.backward_lstms, reverse_within_lengths",
                    "self.forward_lstms, reverse_within_lengths")],
    ),
    Mistake(
        "logits-from-the-first-layer",
        "the heads score the first LSTM layer's states instead of the top layer's",
        caught_by="test_logits_come_from_the_top_layer",
        edits=[Edit("BiLM.forward", "self.forward_head(forward_states[-1])",
                    "self.forward_head(forward_states[0])"),
               Edit("BiLM.forward", "self.backward_head(backward_states[-1])",
                    "self.backward_head(backward_states[0])")],
    ),
    Mistake(
        "layers-not-stacked",
        "every LSTM layer reads the token representation instead of the layer below",
        caught_by="test_each_layer_reads_the_layer_below",
        edits=[Edit("BiLM._run_stack", "layer_input = layer_output\n", "")],
    ),
    Mistake(
        "top-layer-read-as-every-layer",
        "each direction's stack runs through, and its top output is given as every layer: "
        "layer 1 is layer 2, as from one nn.LSTM(num_layers=2)",
        caught_by="test_layer_2_adds_layer_1_and_layer_1_adds_nothing",
        edits=[Edit("BiLM._run_stack", "            outputs.append(layer_output)\n", ""),
               Edit("BiLM._run_stack", "        return outputs\n",
                    "        return [layer_input for _ in lstms]\n")],
    ),
    Mistake(
        "no-residual",
        "the second LSTM layer's output is used without adding its input",
        caught_by="test_layer_2_adds_layer_1_and_layer_1_adds_nothing",
        edits=[Edit("BiLM._run_stack", """
            if depth > 0 and self.residual:
                layer_output = layer_output + layer_input  # residual, as in the paper
        """, "")],
    ),
    Mistake(
        "residual-switch-ignored",
        "the residual connection is always added, whatever `residual` says",
        caught_by="test_without_its_residual_layer_2_is_its_lstm_alone",
        edits=[Edit("BiLM._run_stack", "if depth > 0 and self.residual:", "if depth > 0:")],
    ),
    Mistake(
        "residual-into-layer-1",
        "every layer adds its input, so layer 1 is the first LSTM's output plus p",
        caught_by="test_layer_2_adds_layer_1_and_layer_1_adds_nothing",
        edits=[Edit("BiLM._run_stack", """
            if depth > 0 and self.residual:
                layer_output = layer_output + layer_input  # residual, as in the paper
        """, """
            layer_output = layer_output + layer_input
        """)],
    ),
    Mistake(
        "padding-not-zeroed",
        "the layers keep whatever the LSTMs computed at padded positions",
        caught_by="test_padded_batch_equals_one_sentence_at_a_time",
        edits=[Edit("BiLM.forward", "layers=torch.stack(layers) * mask,",
                    "layers=torch.stack(layers),")],
    ),
    Mistake(
        "layer-0-half-empty",
        "layer 0 is [p; 0]: the token representation padded with zeros to 512",
        caught_by="test_layer_0_is_the_projected_token_twice",
        edits=[Edit("BiLM.forward", "torch.cat([tokens, tokens], dim=-1)",
                    "torch.cat([tokens, torch.zeros_like(tokens)], dim=-1)")],
    ),
    Mistake(
        "reversal-off-by-one",
        "reverse_within_lengths maps step t to lengths - t instead of lengths - 1 - t",
        caught_by="test_reverse_within_lengths_reverses_each_sentence_and_keeps_padding",
        edits=[Edit("reverse_within_lengths", "lengths - 1 - steps", "lengths - steps")],
    ),
    Mistake(
        "reversal-flips-the-whole-batch",
        "reverse_within_lengths flips the padded batch along time, padding and all",
        caught_by="test_reverse_within_lengths_reverses_each_sentence_and_keeps_padding",
        edits=[Edit("reverse_within_lengths", "return x.gather(0, source)", "return x.flip(0)")],
    ),
    Mistake(
        "reversal-index-on-the-cpu",
        "reverse_within_lengths makes its step indices on the CPU, whatever x's device",
        caught_by="test_reverse_within_lengths_works_on_the_device_of_its_input",
        edits=[Edit("reverse_within_lengths", "torch.arange(x.shape[0], device=x.device)",
                    "torch.arange(x.shape[0])")],
    ),
    Mistake(
        "ids-read-as-two-dimensional",
        "BiLM.forward unpacks `seq_len, batch = ids.shape`, so ids with a trailing dimension "
        "(section 8's characters) fail",
        caught_by="test_forward_hands_ids_whole_to_the_token_layer",
        edits=[Edit("BiLM.forward", """
            mask = (torch.arange(ids.shape[0], device=ids.device).unsqueeze(1)
        """, """
            seq_len, batch = ids.shape
            mask = (torch.arange(seq_len, device=ids.device).unsqueeze(1)
        """)],
    ),
    Mistake(
        "num-layers-ignored",
        "the biLM builds two LSTMs per direction, whatever num_layers says",
        caught_by="test_the_smallest_sizes_are_accepted",
        edits=[Edit("BiLM.__init__", FORWARD_STACK, FORWARD_STACK.replace("num_layers", "2")),
               Edit("BiLM.__init__", BACKWARD_STACK, BACKWARD_STACK.replace("num_layers", "2"))],
    ),
]


ALTERNATIVES = [
    Alternative(
        "reversal-by-a-loop",
        "reverse_within_lengths flips each column's first lengths[b] steps in a python loop",
        edits=[Edit("reverse_within_lengths", """
            steps = torch.arange(x.shape[0], device=x.device).unsqueeze(1)  # (T, 1)
            lengths = lengths.to(x.device).unsqueeze(0)  # (1, B)
            source = torch.where(steps < lengths, lengths - 1 - steps, steps)  # (T, B)
            source = source.view(*source.shape, *([1] * (x.dim() - 2))).expand_as(x)
            return x.gather(0, source)
        """, """
            out = x.clone()
            for b, n in enumerate(lengths.tolist()):
                out[:n, b] = x[:n, b].flip(0)
            return out
        """)],
    ),
    Alternative(
        "padding-zeroed-by-masked-fill",
        "the layers' padded positions are zeroed with masked_fill",
        edits=[Edit("BiLM.forward", "layers=torch.stack(layers) * mask,",
                    "layers=torch.stack(layers).masked_fill(~mask, 0.0),")],
    ),
    Alternative(
        "stacks-in-a-module-dict",
        "each direction's LSTMs under its name in one nn.ModuleDict, with its own attribute "
        "names",
        edits=[Edit("BiLM.__init__", FORWARD_STACK + BACKWARD_STACK.lstrip("\n"), """
self.stacks = nn.ModuleDict({
    direction: nn.ModuleList(nn.LSTM(hidden_dim, hidden_dim) for _ in range(num_layers))
    for direction in ("left_to_right", "right_to_left")
})
"""),
               Edit("BiLM.forward", "self._run_stack(self.forward_lstms, tokens)",
                    "self._run_stack(self.stacks['left_to_right'], tokens)"),
               Edit("BiLM.forward", "self.backward_lstms, reverse_within_lengths",
                    "self.stacks['right_to_left'], reverse_within_lengths")],
    ),
]
