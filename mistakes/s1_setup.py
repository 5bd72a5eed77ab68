"""Section 1 (setup): mistakes in seeding and in choosing the device."""

from tools.mistakes import Edit, Mistake

MISTAKES = [
    Mistake(
        "numpy-not-seeded",
        "set_seed seeds python and torch but forgets numpy",
        concept="every random generator the course draws from is seeded",
        caught_by="test_each_generator_is_seeded",
        edits=[Edit("set_seed", "np.random.seed(seed)\n", "")],
    ),
    Mistake(
        "torch-seed-hard-coded",
        "set_seed calls torch.manual_seed(42), whatever the seed",
        concept="the seed argument decides every generator's stream",
        caught_by="test_each_generator_follows_the_seed",
        edits=[Edit("set_seed", "torch.manual_seed(seed)", "torch.manual_seed(42)")],
    ),
    Mistake(
        "cpu-only",
        "get_device always returns the CPU",
        concept="the device is CUDA when it is available",
        caught_by="test_device_is_cuda_when_available",
        edits=[Edit("get_device", 'torch.device("cuda" if torch.cuda.is_available() else "cpu")',
                    'torch.device("cpu")')],
    ),
    Mistake(
        "environment-beats-argument",
        "get_device lets $ELMO_DEVICE override the device passed to it",
        concept="an explicit argument comes before the environment",
        caught_by="test_device_argument_overrides",
        edits=[Edit("get_device",
                    "choice = preferred if preferred is not None "
                    "else os.environ.get(DEVICE_ENV_VAR) or None\n",
                    "choice = os.environ.get(DEVICE_ENV_VAR) or preferred\n")],
    ),
]
