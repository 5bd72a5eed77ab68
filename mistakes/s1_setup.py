"""Section 1 (setup): mistakes in seeding and in choosing the device."""

from tools.mistakes import Alternative, Edit, Mistake

# The code a learner writes in each function the mistakes below edit: the reference's, as
# it was when they were written. A mistake edits this copy, and the edited code replaces
# the function's whole marked block, so that a refactor of solutions/ leaves it as it is.
LEARNER_CODE = {
    "set_seed": """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    """,
    "get_device": """
    choice = preferred if preferred is not None else os.environ.get(DEVICE_ENV_VAR) or None
    if choice is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(choice)
    """,
}

MISTAKES = [
    Mistake(
        "numpy-not-seeded",
        "set_seed seeds python and torch but forgets numpy",
        caught_by="test_each_generator_is_seeded",
        edits=[Edit("set_seed", "np.random.seed(seed)\n", "")],
    ),
    Mistake(
        "python-random-not-seeded",
        "set_seed seeds numpy and torch but forgets python's random",
        caught_by="test_each_generator_is_seeded",
        edits=[Edit("set_seed", "random.seed(seed)\n", "")],
    ),
    Mistake(
        "torch-seed-hard-coded",
        "set_seed calls torch.manual_seed(42), whatever the seed",
        caught_by="test_each_generator_follows_the_seed",
        edits=[Edit("set_seed", "torch.manual_seed(seed)", "torch.manual_seed(42)")],
    ),
    Mistake(
        "cudnn-left-nondeterministic",
        "set_seed seeds the generators but leaves cuDNN's flags alone",
        caught_by="test_set_seed_makes_cudnn_deterministic",
        edits=[Edit("set_seed", """
            torch.backends.cudnn.deterministic = True
            torch.backends.cudnn.benchmark = False
        """, "")],
    ),
    Mistake(
        "cpu-only",
        "get_device always returns the CPU",
        caught_by="test_device_is_cuda_when_available",
        edits=[Edit("get_device", 'torch.device("cuda" if torch.cuda.is_available() else "cpu")',
                    'torch.device("cpu")')],
    ),
    Mistake(
        "auto-device-as-a-string",
        "get_device returns the string 'cuda' or 'cpu' when it decides by itself",
        caught_by="test_device_is_cuda_when_available",
        edits=[Edit("get_device", 'torch.device("cuda" if torch.cuda.is_available() else "cpu")',
                    '"cuda" if torch.cuda.is_available() else "cpu"')],
    ),
    Mistake(
        "requested-device-as-given",
        "get_device returns the requested device as it was given, a string for 'cpu'",
        caught_by="test_device_argument_overrides",
        edits=[Edit("get_device", "return torch.device(choice)", "return choice")],
    ),
    Mistake(
        "environment-beats-argument",
        "get_device lets $ELMO_DEVICE override the device passed to it",
        caught_by="test_device_argument_overrides",
        edits=[Edit("get_device",
                    "choice = preferred if preferred is not None "
                    "else os.environ.get(DEVICE_ENV_VAR) or None\n",
                    "choice = os.environ.get(DEVICE_ENV_VAR) or preferred\n")],
    ),
    Mistake(
        "argument-ignored",
        "get_device reads only $ELMO_DEVICE and CUDA's availability, never its argument",
        caught_by="test_device_argument_overrides",
        edits=[Edit("get_device",
                    "choice = preferred if preferred is not None "
                    "else os.environ.get(DEVICE_ENV_VAR) or None\n",
                    "choice = os.environ.get(DEVICE_ENV_VAR) or None\n")],
    ),
    Mistake(
        "environment-ignored",
        "get_device never reads $ELMO_DEVICE",
        caught_by="test_device_environment_variable_overrides",
        edits=[Edit("get_device",
                    "choice = preferred if preferred is not None "
                    "else os.environ.get(DEVICE_ENV_VAR) or None\n",
                    "choice = preferred\n")],
    ),
    Mistake(
        "empty-environment-variable-used",
        "get_device takes $ELMO_DEVICE whenever it is set, an empty string too",
        caught_by="test_an_empty_environment_variable_counts_as_unset",
        edits=[Edit("get_device", "else os.environ.get(DEVICE_ENV_VAR) or None",
                    "else os.environ.get(DEVICE_ENV_VAR)")],
    ),
]


ALTERNATIVES = [
    Alternative(
        "device-by-cases",
        "get_device as three early returns, $ELMO_DEVICE read into a variable of its own",
        edits=[Edit("get_device", """
            choice = preferred if preferred is not None else os.environ.get(DEVICE_ENV_VAR) or None
            if choice is None:
                return torch.device("cuda" if torch.cuda.is_available() else "cpu")
            return torch.device(choice)
        """, """
            if preferred is not None:
                return torch.device(preferred)
            requested = os.environ.get(DEVICE_ENV_VAR, "")
            if requested:
                return torch.device(requested)
            return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
        """)],
    ),
    Alternative(
        "every-cuda-device-seeded-too",
        "set_seed also calls torch.cuda.manual_seed_all",
        edits=[Edit("set_seed", "torch.manual_seed(seed)  # also seeds every CUDA device\n",
                    "torch.manual_seed(seed)\ntorch.cuda.manual_seed_all(seed)\n")],
    ),
]
