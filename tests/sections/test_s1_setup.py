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
    for name, draw in GENERATORS:
        setup.set_seed(7)
        first = draw()
        setup.set_seed(7)
        assert draw() == first, f"set_seed does not seed {name}'s generator"


def test_each_generator_follows_the_seed(setup):
    for name, draw in GENERATORS:
        setup.set_seed(1)
        first = draw()
        setup.set_seed(2)
        assert draw() != first, (
            f"set_seed(1) and set_seed(2) gave {name} the same numbers: "
            f"is {name}'s seed a constant instead of the seed argument?"
        )


def test_different_seeds_give_different_draws(setup):
    setup.set_seed(1)
    first = draws()
    setup.set_seed(2)
    assert draws() != first, "set_seed(1) and set_seed(2) gave the same numbers"


def test_same_seed_gives_same_initial_weights(setup):
    setup.set_seed(3)
    a = torch.nn.LSTM(4, 4).state_dict()
    setup.set_seed(3)
    b = torch.nn.LSTM(4, 4).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a), "one seed should give one initialisation"


@pytest.mark.parametrize("bad, error, found", [("3", TypeError, "str '3'"),
                                               (2.5, TypeError, "float 2.5"),
                                               (-1, ValueError, "-1"),
                                               (2**32, ValueError, str(2**32))])
def test_bad_seed_is_a_clear_error(setup, bad, error, found):
    with pytest.raises(error, match="seed") as err:
        setup.set_seed(bad)
    assert found in str(err.value), f"the message should say what it got ({found}): {err.value}"


def test_set_seed_makes_cudnn_deterministic(setup):
    setup.set_seed(0)
    assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark, (
        "on CUDA, cuDNN's LSTM repeats exactly only with cudnn.deterministic = True and "
        "cudnn.benchmark = False"
    )


@pytest.mark.parametrize("cuda_available, expected", [(True, "cuda"), (False, "cpu")])
def test_device_is_cuda_when_available(setup, monkeypatch, cuda_available, expected):
    monkeypatch.delenv(setup.DEVICE_ENV_VAR, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda_available)
    device = setup.get_device()
    assert isinstance(device, torch.device), f"expected a torch.device, got {device!r}"
    assert device.type == expected, (
        f"with CUDA {'available' if cuda_available else 'unavailable'}, expected "
        f"{expected!r}, got {device.type!r}"
    )


def test_device_argument_overrides(setup, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv(setup.DEVICE_ENV_VAR, "cuda")
    assert setup.get_device("cpu") == torch.device("cpu"), "the argument comes first"
    assert setup.get_device(torch.device("cpu")) == torch.device("cpu")


def test_device_environment_variable_overrides(setup, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv(setup.DEVICE_ENV_VAR, "cpu")
    assert setup.get_device() == torch.device("cpu"), f"${setup.DEVICE_ENV_VAR}=cpu was ignored"


def test_bad_device_is_a_clear_error(setup, monkeypatch):
    monkeypatch.delenv(setup.DEVICE_ENV_VAR, raising=False)
    with pytest.raises(ValueError, match="gpu") as err:
        setup.get_device("gpu")
    assert "preferred" in str(err.value), f"the message should name the argument: {err.value}"
    monkeypatch.setenv(setup.DEVICE_ENV_VAR, "tpu")
    with pytest.raises(ValueError, match="tpu") as err:
        setup.get_device()
    assert setup.DEVICE_ENV_VAR in str(err.value), (
        f"the message should name ${setup.DEVICE_ENV_VAR}, where the bad device came from: "
        f"{err.value}"
    )


def test_cuda_requested_without_cuda_is_a_clear_error(setup, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="CUDA"):
        setup.get_device("cuda")
    assert setup.get_device("cpu") == torch.device("cpu"), "the CPU needs no CUDA"
