"""Section 1: set_seed makes runs repeat exactly; get_device picks CUDA when it can.

Each test is an act, which runs the section's code and returns what it computed as data, and
a judge, which checks that data alone (`judged.py`). The acts of get_device fake CUDA's
availability and $ELMO_DEVICE with pytest's `monkeypatch`, and send the device they got.
"""

import random

import numpy as np
import pytest
import torch

from .judged import judged
from .strategies import seeds

# the variable that get_device reads (the section's given `DEVICE_ENV_VAR`), as the judges
# name it: the acts set the module's own
DEVICE_ENV_VAR = "ELMO_DEVICE"


def draws():
    return random.random(), float(np.random.rand()), torch.rand(3).tolist()


@judged(seed=seeds)
def test_same_seed_gives_same_random_draws(setup, seed):
    """set_seed(s) twice: python, numpy and torch draw the same numbers after each."""
    setup.set_seed(seed)
    first = draws()
    setup.set_seed(seed)
    return {"first": first, "again": draws()}


@test_same_seed_gives_same_random_draws.judge
def _(out):
    first, again = out["first"], out["again"]
    assert again == first, (
        "after set_seed(s) twice, python, numpy and torch should draw the same numbers; "
        "is one of the three generators not seeded?"
    )


GENERATORS = [("random", random.random), ("numpy", np.random.rand),
              ("torch", lambda: torch.rand(1).item())]


@judged()
def test_each_generator_is_seeded(setup):
    """Each of python's random, numpy and torch repeats its draw after set_seed(7)."""
    found = {}
    for name, draw in GENERATORS:
        setup.set_seed(7)
        first = draw()
        setup.set_seed(7)
        found[name] = (first, draw())
    return found


@test_each_generator_is_seeded.judge
def _(out):
    for name, _draw in GENERATORS:
        first, again = out[name]
        assert again == first, (
            f"set_seed does not seed {name}'s generator: after set_seed(7) twice it drew "
            f"{first} and then {again}"
        )


@judged()
def test_each_generator_follows_the_seed(setup):
    """set_seed(1) and set_seed(2) give each generator different numbers: the seed decides."""
    found = {}
    for name, draw in GENERATORS:
        setup.set_seed(1)
        first = draw()
        setup.set_seed(2)
        found[name] = (first, draw())
    return found


@test_each_generator_follows_the_seed.judge
def _(out):
    for name, _draw in GENERATORS:
        first, second = out[name]
        assert second != first, (
            f"set_seed(1) and set_seed(2) gave {name} the same numbers: "
            f"is {name}'s seed a constant instead of the seed argument?"
        )


@judged()
def test_set_seed_makes_cudnn_deterministic(setup, monkeypatch):
    """set_seed sets cudnn.deterministic = True and cudnn.benchmark = False."""
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", False)
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", True)
    setup.set_seed(0)
    return {"found": (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)}


@test_set_seed_makes_cudnn_deterministic.judge
def _(out):
    found = out["found"]
    assert found == (True, False), (
        "on CUDA, cuDNN's LSTM repeats exactly only with cudnn.deterministic = True and "
        f"cudnn.benchmark = False; after set_seed they are {found[0]} and {found[1]}"
    )


def device_data(device) -> dict:
    """What get_device returned, as data (the act's half of `returned`): a torch.device by
    its name, plain data (a string, None) as it is, anything else by its repr."""
    if isinstance(device, torch.device):
        return {"device": str(device)}
    if device is None or isinstance(device, bool | int | float | str):
        return {"plain": device}
    return {"repr": repr(device)}


class Shown:
    """What get_device returned that is neither a torch.device nor plain data, as a judge
    sees it: its repr, and no device."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def returned(data: dict):
    """What get_device returned, from `device_data`'s data: a torch.device again (the same
    type, index, str and repr), plain data as it was, anything else `Shown`."""
    if "device" in data:
        return torch.device(data["device"])
    return data["plain"] if "plain" in data else Shown(data["repr"])


@pytest.mark.parametrize("cuda_available, expected", [(True, "cuda"), (False, "cpu")],
                         ids=["cuda available", "no cuda"])
@judged()
def test_device_is_cuda_when_available(setup, monkeypatch, cuda_available, expected):
    """Without an argument or $ELMO_DEVICE: CUDA when torch.cuda.is_available(), else CPU."""
    monkeypatch.delenv(setup.DEVICE_ENV_VAR, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda_available)
    return device_data(setup.get_device())


@test_device_is_cuda_when_available.judge
def _(out, cuda_available, expected):
    device = returned(out)
    assert isinstance(device, torch.device), f"expected a torch.device, got {device!r}"
    assert device.type == expected, (
        f"with CUDA {'available' if cuda_available else 'unavailable'}, expected "
        f"{expected!r}, got {device.type!r}"
    )


# get_device's argument, by the test's ids: a parameter of a judged test is plain data
PREFERRED = {"str": "cpu", "torch.device": torch.device("cpu")}


@pytest.mark.parametrize("passed_as", ["str", "torch.device"], ids=["str", "torch.device"])
@judged()
def test_device_argument_overrides(setup, monkeypatch, passed_as):
    """get_device("cpu") is the CPU, as a torch.device, even with $ELMO_DEVICE=cuda and CUDA."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv(setup.DEVICE_ENV_VAR, "cuda")
    return device_data(setup.get_device(PREFERRED[passed_as]))


@test_device_argument_overrides.judge
def _(out, passed_as):
    preferred, device = PREFERRED[passed_as], returned(out)
    assert isinstance(device, torch.device), (
        f"get_device({preferred!r}) should return a torch.device, got {device!r}"
    )
    assert device == torch.device("cpu"), (
        f"the argument comes first: get_device({preferred!r}) with ${DEVICE_ENV_VAR}=cuda "
        f"gave {device}, expected cpu"
    )


@judged()
def test_device_environment_variable_overrides(setup, monkeypatch):
    """$ELMO_DEVICE=cpu gives the CPU, as a torch.device, even where CUDA is available."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv(setup.DEVICE_ENV_VAR, "cpu")
    return device_data(setup.get_device())


@test_device_environment_variable_overrides.judge
def _(out):
    device = returned(out)
    assert device == torch.device("cpu") and isinstance(device, torch.device), (
        f"with ${DEVICE_ENV_VAR}=cpu and no argument, expected torch.device('cpu'), "
        f"got {device!r}"
    )


@judged()
def test_an_empty_environment_variable_counts_as_unset(setup, monkeypatch):
    """$ELMO_DEVICE set to "" decides nothing: CUDA when it is available."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv(setup.DEVICE_ENV_VAR, "")
    return device_data(setup.get_device())


@test_an_empty_environment_variable_counts_as_unset.judge
def _(out):
    device = returned(out)
    assert isinstance(device, torch.device) and device.type == "cuda", (
        f"an empty ${DEVICE_ENV_VAR} is as good as unset: expected cuda, got {device!r}"
    )
