"""pg.type_check (Chainer's chainer.utils.type_check): expressions, their errors, iteration,
the function named in messages, and the helpers Chainer offers."""

from __future__ import annotations

import itertools
import pickle
import threading

import numpy as np
import pytest

import polygrad as pg
from polygrad import type_check
from polygrad.core.type_check import InvalidType


def apply_checked(check, *inputs, name="Checked"):
    """Apply a fresh Function whose check_type_forward is ``check(in_types)``."""
    cls = type(name, (pg.Function,), {
        "check_type_forward": lambda self, in_types: check(in_types),
        "forward": lambda self, inputs: (inputs[0] * 1,),
    })
    return cls()(*inputs)


def failure(check, *inputs, name="Checked"):
    """The message of the InvalidType that ``check`` raises."""
    with pytest.raises(InvalidType) as info:
        apply_checked(check, *inputs, name=name)
    return str(info.value)


X = np.ones((2, 3))


# ---------------------------------------------------------------------------
# an error while evaluating an expression
# ---------------------------------------------------------------------------
def test_attribute_error_in_an_expression_is_invalid_type_naming_it():
    """A missing attribute of a value (a typo) is an InvalidType naming the expression, caused by the
    AttributeError, not a RecursionError."""
    with pytest.raises(InvalidType) as info:
        apply_checked(lambda t: type_check.expect(t[0].dtype.knd == "f"), X)
    msg = str(info.value)
    assert "Expect: in_types[0].dtype.knd == 'f'" in msg and "knd" in msg.split("Actual:")[1]
    assert isinstance(info.value.__cause__, AttributeError)


def test_dtype_kind_on_a_dtype_without_kind_is_invalid_type():
    """Chainer's x.dtype.kind on array_api_strict, whose dtypes have no kind: an InvalidType that says so."""
    strict = pytest.importorskip("array_api_strict")
    x = strict.asarray([1.0, 2.0])
    with pytest.raises(InvalidType) as info:
        apply_checked(lambda t: type_check.expect(t[0].dtype.kind == "f"), x)
    assert "Expect: in_types[0].dtype.kind == 'f'" in str(info.value) and "kind" in info.value.actual


def test_attribute_error_when_a_condition_is_used_as_a_bool_is_the_attribute_error():
    """``if x.dtype.knd == 'f':`` raises the AttributeError itself."""
    def check(t):
        if t[0].dtype.knd == "f":
            pass

    with pytest.raises(AttributeError, match="knd"):
        apply_checked(check, X)


# ---------------------------------------------------------------------------
# iterating a shape
# ---------------------------------------------------------------------------
def test_iterating_a_shape_gives_one_expression_per_dimension():
    """Iterating, unpacking and tuple() of a shape end after ndim items; each item is shape[i]."""
    seen = {}

    def check(t):
        first = list(itertools.islice(iter(t[0].shape), 5))  # bounded: cannot run forever
        assert len(first) == 2
        n, c = t[0].shape
        seen["text"] = repr(c)
        seen["dims"] = [d.eval() for d in tuple(t[0].shape)]
        type_check.expect(all(d > 0 for d in t[0].shape), c == 3)

    apply_checked(check, X)
    assert seen == {"text": "in_types[0].shape[1]", "dims": [2, 3]}


def test_a_dimension_unpacked_from_a_shape_fails_with_its_name():
    def check(t):
        first = list(itertools.islice(iter(t[0].shape), 5))  # bounded: cannot run forever
        assert len(first) == 2
        n, c = t[0].shape
        type_check.expect(c == 4)

    msg = failure(check, X)
    assert "Expect: in_types[0].shape[1] == 4" in msg and "Actual: 3 != 4" in msg


def test_iterating_an_expression_that_is_not_a_sequence_is_a_type_error():
    def check(t):
        list(itertools.islice(iter(t[0].ndim), 5))  # bounded: cannot run forever

    with pytest.raises(TypeError, match=r"in_types\[0\]\.ndim"):
        apply_checked(check, X)


# ---------------------------------------------------------------------------
# the function named in messages
# ---------------------------------------------------------------------------
def test_message_names_the_function_of_this_thread():
    """Another thread applying a Function during this thread's check does not change the name."""
    gate_a, gate_b = threading.Event(), threading.Event()

    def check(t):
        gate_a.set()
        assert gate_b.wait(10)
        type_check.expect(t[0].ndim == 2)

    def other():
        assert gate_a.wait(10)
        apply_checked(lambda t: None, np.ones(3), name="Other")
        gate_b.set()

    thread = threading.Thread(target=other, daemon=True)
    thread.start()
    try:
        msg = failure(check, np.ones(3), name="NeedsMatrix")
    finally:
        gate_b.set()
        thread.join(10)
    assert "performed in: NeedsMatrix (Forward)" in msg


def test_message_names_the_outer_function_after_an_inner_check():
    def check(t):
        apply_checked(lambda t: None, np.ones(3), name="Inner")
        type_check.expect(t[0].ndim == 3)

    assert "performed in: Outer (Forward)" in failure(check, X, name="Outer")


def test_expect_outside_a_check_names_no_function():
    apply_checked(lambda t: None, X, name="Earlier")
    with pytest.raises(InvalidType) as info:
        type_check.expect(False)
    assert "Earlier" not in str(info.value) and "performed in" not in str(info.value)


def test_invalid_type_pickles():
    with pytest.raises(InvalidType) as info:
        apply_checked(lambda t: type_check.expect(t[0].ndim == 3), X)
    back = pickle.loads(pickle.dumps(info.value))
    assert str(back) == str(info.value)
    assert (back.expect, back.actual) == (info.value.expect, info.value.actual)
