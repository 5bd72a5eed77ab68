"""Section 1: set_seed makes runs repeat exactly; get_device picks CUDA when it can."""

import random

import numpy as np
import pytest
import torch
from hypothesis import given

from .strategies import seeds


def draws():
    return random.random(), float(np.random.rand()), torch.rand(3).tolist()


@given(seed=seeds)
def test_same_seed_gives_same_random_draws(setup, seed):
    """set_seed(s) twice: python, numpy and torch draw the same numbers after each."""
    setup.set_seed(seed)
    first = draws()
    setup.set_seed(seed)
    assert draws() == first, (
        "after set_seed(s) twice, python, numpy and torch should draw the same numbers; "
        "is one of the three generators not seeded?"
    )


GENERATORS = [("random", random.random), ("numpy", np.random.rand),
              ("torch", lambda: torch.rand(1).item())]


def test_each_generator_is_seeded(setup):
    """Each of python's random, numpy and torch repeats its draw after set_seed(7)."""
    for name, draw in GENERATORS:
        setup.set_seed(7)
        first = draw()
        setup.set_seed(7)
        again = draw()
        assert again == first, (
            f"set_seed does not seed {name}'s generator: after set_seed(7) twice it drew "
            f"{first} and then {again}"
        )


def test_each_generator_follows_the_seed(setup):
    """set_seed(1) and set_seed(2) give each generator different numbers: the seed decides."""
    for name, draw in GENERATORS:
        setup.set_seed(1)
        first = draw()
        setup.set_seed(2)
        assert draw() != first, (
            f"set_seed(1) and set_seed(2) gave {name} the same numbers: "
            f"is {name}'s seed a constant instead of the seed argument?"
        )


def test_set_seed_makes_cudnn_deterministic(setup, monkeypatch):
    """set_seed sets cudnn.deterministic = True and cudnn.benchmark = False."""
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", False)
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", True)
    setup.set_seed(0)
    found = (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
    assert found == (True, False), (
        "on CUDA, cuDNN's LSTM repeats exactly only with cudnn.deterministic = True and "
        f"cudnn.benchmark = False; after set_seed they are {found[0]} and {found[1]}"
    )


@pytest.mark.parametrize("cuda_available, expected", [(True, "cuda"), (False, "cpu")],
                         ids=["cuda available", "no cuda"])
def test_device_is_cuda_when_available(setup, monkeypatch, cuda_available, expected):
    """Without an argument or $ELMO_DEVICE: CUDA when torch.cuda.is_available(), else CPU."""
    monkeypatch.delenv(setup.DEVICE_ENV_VAR, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda_available)
    device = setup.get_device()
    assert isinstance(device, torch.device), f"expected a torch.device, got {device!r}"
    assert device.type == expected, (
        f"with CUDA {'available' if cuda_available else 'unavailable'}, expected "
        f"{expected!r}, got {device.type!r}"
    )


@pytest.mark.parametrize("preferred", ["cpu", torch.device("cpu")], ids=["str", "torch.device"])
def test_device_argument_overrides(setup, monkeypatch, preferred):
    """get_device("cpu") is the CPU, as a torch.device, even with $ELMO_DEVICE=cuda and CUDA."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv(setup.DEVICE_ENV_VAR, "cuda")
    device = setup.get_device(preferred)
    assert isinstance(device, torch.device), (
        f"get_device({preferred!r}) should return a torch.device, got {device!r}"
    )
    assert device == torch.device("cpu"), (
        f"the argument comes first: get_device({preferred!r}) with ${setup.DEVICE_ENV_VAR}=cuda "
        f"gave {device}, expected cpu"
    )


def test_device_environment_variable_overrides(setup, monkeypatch):
    """$ELMO_DEVICE=cpu gives the CPU, as a torch.device, even where CUDA is available."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv(setup.DEVICE_ENV_VAR, "cpu")
    device = setup.get_device()
    assert device == torch.device("cpu") and isinstance(device, torch.device), (
        f"with ${setup.DEVICE_ENV_VAR}=cpu and no argument, expected torch.device('cpu'), "
        f"got {device!r}"
    )


def test_an_empty_environment_variable_counts_as_unset(setup, monkeypatch):
    """$ELMO_DEVICE set to "" decides nothing: CUDA when it is available."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv(setup.DEVICE_ENV_VAR, "")
    device = setup.get_device()
    assert isinstance(device, torch.device) and device.type == "cuda", (
        f"an empty ${setup.DEVICE_ENV_VAR} is as good as unset: expected cuda, got {device!r}"
    )
