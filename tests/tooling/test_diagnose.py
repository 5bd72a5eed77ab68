"""The tensor-aware failure message (`course.diagnose`): each of the catalogue's usual
mistakes is named when it is what happened, and none when the tensors merely differ."""

import warnings

import pytest
import torch

from course.diagnose import DIGEST_LENGTH, assert_close, diagnose

torch.manual_seed(0)
STATES = torch.randn(7, 3, 8)  # (T, B, 2 * hidden): forward half, then backward half
SCALARS = torch.randn(3, 5)


def swapped_halves(t):
    first, second = t.chunk(2, dim=-1)
    return torch.cat([second, first], dim=-1)


def shifted_later(t):
    return torch.cat([torch.randn(1, *t.shape[1:]), t[:-1]])


def shifted_earlier(t):
    return torch.cat([t[1:], torch.randn(1, *t.shape[1:])])


MISTAKES = {
    "time axis reversed": (STATES.flip(0), STATES),
    "one step later": (shifted_later(STATES), STATES),
    "one step earlier": (shifted_earlier(STATES), STATES),
    "two halves of the last axis swapped": (swapped_halves(STATES), STATES),
    "time and batch axes swapped": (STATES.transpose(0, 1), STATES),
    "times 0.75": (0.75 * STATES, STATES),
    "sum to 1 along axis 0": (SCALARS.softmax(0), SCALARS.softmax(1)),
}


@pytest.mark.parametrize("words", list(MISTAKES))
def test_each_mistake_is_named(words):
    found, expected = MISTAKES[words]
    assert words in (diagnose(found, expected) or ""), diagnose(found, expected)
    with pytest.raises(AssertionError, match=words):
        assert_close(found, expected, "the states")


def test_a_difference_that_no_mistake_explains_is_not_named():
    """Noise, or a tensor merely closer to one transform than to the expected one."""
    # Its own draw, not the process's: which tests ran before changed the noise, and 1 draw
    # in 200 of it (seeds 0-199, measured) lies near enough to 1.1 times STATES to be named
    # a scale factor.
    noisy = STATES + 0.1 * torch.randn(STATES.shape, generator=torch.Generator().manual_seed(1))
    assert diagnose(noisy, STATES) is None
    half_reversed = 0.5 * (STATES + STATES.flip(0))  # nearer the reversal, but not it
    assert diagnose(half_reversed, STATES) is None
    with pytest.raises(AssertionError) as raised:
        assert_close(noisy, STATES, "the states")
    message = str(raised.value)
    assert "matches" not in message and "largest difference" in message
    assert len(message) < 400, "a message names the largest difference, never a dump"


def test_equal_tensors_pass_and_a_shape_is_said():
    assert_close(STATES.clone(), STATES, "the states")
    with pytest.raises(AssertionError, match=r"shape \(7, 3, 4\) where \(7, 3, 8\)"):
        assert_close(STATES[..., :4], STATES, "the states")


def test_a_scalar_is_compared_and_its_factor_named():
    """A loss is a 0-d tensor: no axis to reverse, but a mean where a sum is asked shows;
    otherwise its two values, with no index to place them."""
    loss = torch.tensor(3.2)
    with pytest.raises(AssertionError, match="times 0.5"):
        assert_close(loss / 2, loss, "the loss")
    with pytest.raises(AssertionError, match=r"found 4\.2, expected 3\.2$"):
        assert_close(loss + 1, loss, "the loss")


def test_a_tensor_that_needs_its_gradient_is_compared_without_a_warning():
    """A learner's output usually carries a graph: the message is made without torch's
    warning about converting such a tensor to a number."""
    found = (STATES + 1).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AssertionError, match="largest difference"):
            assert_close(found, STATES, "the states")


def test_a_scalar_names_only_a_usual_factor():
    """Any number is some factor of another: 0.8 times a loss names nothing."""
    loss = torch.tensor(3.2)
    assert diagnose(0.8 * loss, loss) is None
    assert "times 2" in diagnose(2 * loss, loss)


def test_a_mismatch_fingerprints_the_wrong_output_and_nothing_of_the_expected():
    """The same wrong tensor gives the same digest, another wrong one another, and the
    expected tensor does not enter it."""
    def digest(found, expected):
        with pytest.raises(AssertionError) as raised:
            assert_close(found, expected, "the states")
        return raised.value.output_digest

    wrong = STATES * 3
    first = digest(wrong, STATES)
    assert len(first) == DIGEST_LENGTH and int(first, 16) >= 0
    assert digest(wrong.clone(), STATES) == first  # the same output, made again
    assert digest(wrong, STATES + 1) == first  # another expected tensor: the same digest
    assert digest(wrong[..., :4], STATES) != first  # another output
    assert digest(STATES * 2, STATES) != first


def test_the_largest_difference_is_placed_by_the_dimensions_names():
    found = STATES.clone()
    found[2, 1, 5] += 1
    with pytest.raises(AssertionError, match="at position 2, sentence 1, unit 5 "):
        assert_close(found, STATES, "the states", dims=("position", "sentence", "unit"))

