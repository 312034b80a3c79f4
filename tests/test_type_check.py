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


def test_type_check_eval_of_a_failing_attribute_raises_attribute_error():
    with pytest.raises(AttributeError, match="knd"):
        apply_checked(lambda t: type_check.eval(t[0].dtype.knd), X)


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


# ---------------------------------------------------------------------------
# Chainer's API
# ---------------------------------------------------------------------------
def test_eval_gives_values():
    seen = {}

    def check(t):
        seen["ndim"] = type_check.eval(t[0].ndim)
        seen["shape"] = type_check.eval(t[0].shape)
        seen["cond"] = type_check.eval(t[0].ndim == 2)
        seen["plain"] = type_check.eval(5)
        seen["method"] = t[0].shape[1].eval()

    apply_checked(check, X)
    assert seen == {"ndim": 2, "shape": (2, 3), "cond": True, "plain": 5, "method": 3}


def test_prod_of_a_shape():
    apply_checked(lambda t: type_check.expect(type_check.prod(t[0].shape) == 6), X)
    msg = failure(lambda t: type_check.expect(type_check.prod(t[0].shape) == 5), X)
    assert "Expect: prod(in_types[0].shape) == 5" in msg and "Actual: 6 != 5" in msg


def test_argname_names_the_inputs_in_messages():
    def check(t):
        type_check.argname(t, ("x", "W"))
        x, w = t
        type_check.expect(x.shape[1] == w.shape[1])

    msg = failure(check, X, np.ones((2, 4)))
    assert "Expect: x.shape[1] == W.shape[1]" in msg and "Actual: 3 != 4" in msg


def test_argname_refuses_another_number_of_inputs():
    with pytest.raises(InvalidType) as info:
        apply_checked(lambda t: type_check._argname(t, ("x", "W")), X)
    assert (info.value.expect, info.value.actual) == ("2 argument(s)", "1 argument(s)")


def test_same_types():
    strict = pytest.importorskip("array_api_strict")
    assert type_check.same_types(np.ones(2), np.ones(3))
    assert not type_check.same_types(np.ones(2), strict.ones(3))
    assert not type_check.same_types(np.ones(2), 2.0)
    assert type_check.same_types(*type_check.TypeInfoTuple.from_arrays((X, np.ones(2))))
    assert not type_check.same_types(*type_check.TypeInfoTuple.from_arrays((X, strict.ones(2))))


def test_make_variable_names_a_value():
    with pytest.raises(InvalidType) as info:
        type_check.expect(type_check.make_variable(3, "n") == 4)
    assert (info.value.expect, info.value.actual) == ("n == 4", "3 != 4")


@pytest.mark.parametrize("build, expect, actual", [
    (lambda t: -t[0].ndim == -3, "-in_types[0].ndim == -3", "-2 != -3"),
    (lambda t: +t[0].ndim == 3, "+in_types[0].ndim == 3", "2 != 3"),
    (lambda t: ~t[0].ndim == 0, "~in_types[0].ndim == 0", "-3 != 0"),
    (lambda t: t[0].size / 4 == 1, "in_types[0].size / 4 == 1", "1.5 != 1"),
    (lambda t: 12 / t[0].size == 1, "12 / in_types[0].size == 1", "2.0 != 1"),
    (lambda t: 7 // t[0].ndim == 1, "7 // in_types[0].ndim == 1", "3 != 1"),
    (lambda t: 7 % t[0].size == 0, "7 % in_types[0].size == 0", "1 != 0"),
    (lambda t: t[0].ndim ** 3 == 9, "in_types[0].ndim ** 3 == 9", "8 != 9"),
    (lambda t: (t[0].ndim & 1) == 1, "in_types[0].ndim & 1 == 1", "0 != 1"),
    (lambda t: (t[0].ndim | 1) == 2, "in_types[0].ndim | 1 == 2", "3 != 2"),
    (lambda t: (t[0].ndim ^ 3) == 0, "in_types[0].ndim ^ 3 == 0", "1 != 0"),
    (lambda t: (t[0].ndim << 1) == 2, "in_types[0].ndim << 1 == 2", "4 != 2"),
    (lambda t: (t[0].ndim >> 1) == 0, "in_types[0].ndim >> 1 == 0", "1 != 0"),
    (lambda t: (t[0].shape[0] + 1) * 2 == 5, "(in_types[0].shape[0] + 1) * 2 == 5", "6 != 5"),
    (lambda t: t[0].size - (t[0].ndim - 1) == 0, "in_types[0].size - (in_types[0].ndim - 1) == 0", "5 != 0"),
    (lambda t: t[0].shape[1:] == (4,), "in_types[0].shape[1:] == (4,)", "(3,) != (4,)"),
    (lambda t: t[0].shape == (t[1].shape[0], 3), "in_types[0].shape == (in_types[1].shape[0], 3)",
     "(2, 3) != (5, 3)"),
    (lambda t: t[0].shape.count(3) == 2, "in_types[0].shape.count(3) == 2", "1 != 2"),
])
def test_operators_evaluate_and_show_their_text(build, expect, actual):
    with pytest.raises(InvalidType) as info:
        apply_checked(lambda t: type_check.expect(build(t)), X, np.ones(5))
    assert (info.value.expect, info.value.actual) == (expect, actual)


def test_conditions_combine_with_and_or_not():
    def ok(t):
        x = t[0]
        type_check.expect((x.ndim == 2) & (x.shape[0] == 2), (x.ndim == 1) | (x.ndim == 2), ~(x.ndim == 1))

    apply_checked(ok, X)
    cases = [
        (lambda x: (x.ndim == 2) & (x.shape[0] == 5), "(in_types[0].ndim == 2) & (in_types[0].shape[0] == 5)",
         "2 != 5"),
        (lambda x: (x.ndim == 1) | (x.ndim == 3), "(in_types[0].ndim == 1) | (in_types[0].ndim == 3)",
         "2 != 1 and 2 != 3"),
        (lambda x: ~(x.ndim == 2), "~(in_types[0].ndim == 2)", "2 == 2"),
    ]
    for build, expect, actual in cases:
        with pytest.raises(InvalidType) as info:
            apply_checked(lambda t: type_check.expect(build(t[0])), X)
        assert (info.value.expect, info.value.actual) == (expect, actual)


def test_and_does_not_evaluate_the_right_condition_after_the_left_fails():
    """As in expect(a, b): shape[1] of a 1-d input is never looked at once ndim == 2 fails."""
    msg = failure(lambda t: type_check.expect((t[0].ndim == 2) & (t[0].shape[1] == 3)), np.ones(3))
    assert "Actual: 1 != 2" in msg


@pytest.mark.parametrize("value", [5, 0, 2.0, None, "yes", np.int64(1)])
def test_expect_refuses_what_is_not_a_condition(value):
    """expect(5) used to pass without a word; expect(x.ndim) to fail with 'no len()'."""
    with pytest.raises(TypeError, match="condition") as info:
        type_check.expect(value)
    assert not isinstance(info.value, InvalidType)


def test_expect_refuses_an_expression():
    with pytest.raises(TypeError, match=r"condition.*in_types\[0\]\.ndim") as info:
        apply_checked(lambda t: type_check.expect(t[0].ndim), X)
    assert not isinstance(info.value, InvalidType)


def test_expect_takes_bools():
    type_check.expect(True, np.True_)
    with pytest.raises(InvalidType):
        type_check.expect(True, np.False_)


def test_expect_broadcast_shapes():
    apply_checked(lambda t: type_check.expect_broadcast_shapes(t[0].shape, t[1].shape), X, np.ones(3))
    apply_checked(lambda t: type_check.expect_broadcast_shapes(t[0].shape, t[1].shape), X, np.ones((4, 1, 1)))
    msg = failure(lambda t: type_check.expect_broadcast_shapes(t[0].shape, t[1].shape), X, np.ones(4))
    assert "cannot broadcast" in msg
    assert "in_types[0].shape = (2, 3)" in msg and "in_types[1].shape = (4,)" in msg


# ---------------------------------------------------------------------------
# sizes not known yet (dask after boolean indexing)
# ---------------------------------------------------------------------------
@pytest.fixture
def unknown_length():
    pytest.importorskip("dask.array")
    if "dask" not in pg.backends():
        pytest.skip("the dask backend is not installed")
    d = pg.to_backend(np.arange(6.0), "dask")
    return d[d > 2]


@pytest.mark.parametrize("build, text", [
    (lambda x: x.shape[0] == 3, "in_types[0].shape[0] == 3"),
    (lambda x: x.shape[0] != 3, "in_types[0].shape[0] != 3"),
    (lambda x: x.shape[0] >= 0, "in_types[0].shape[0] >= 0"),
    (lambda x: x.shape == (3,), "in_types[0].shape == (3,)"),
    (lambda x: x.size == 3, "in_types[0].size == 3"),
    (lambda x: type_check.prod(x.shape) == 3, "prod(in_types[0].shape) == 3"),
])
def test_an_unknown_size_is_reported_not_compared(unknown_length, build, text):
    """dask's NaN for a length not computed: no silent pass of != and no 'nan != 3'."""
    with pytest.raises(InvalidType) as info:
        apply_checked(lambda t: type_check.expect(build(t[0])), unknown_length)
    assert info.value.expect == text
    assert "is unknown" in info.value.actual and "nan" not in info.value.actual


def test_known_facts_of_an_array_with_an_unknown_size_are_checked(unknown_length):
    apply_checked(lambda t: type_check.expect(t[0].ndim == 1, t[0].dtype == np.float64), unknown_length)


def test_an_unknown_size_in_python_code_raises_instead_of_comparing(unknown_length):
    def check(t):
        if type_check.eval(t[0].shape[0]) != 3:  # NaN != 3 would be True
            raise AssertionError("compared an unknown size")

    with pytest.raises(InvalidType, match=r"in_types\[0\]\.shape\[0\] is unknown"):
        apply_checked(check, unknown_length)


def test_a_checked_function_on_a_symbolic_input_is_refused_as_any_function():
    """pg.function's symbolic inputs: the documented refusal, not a check failing on 'float64' or on
    a size unknown until the compiled function runs."""
    from polygrad import symbolic as T

    with pytest.raises(TypeError, match="cannot run on backend 'symbolic'") as info:
        apply_checked(lambda t: type_check.expect(t[0].dtype == np.float64, t[0].shape[0] == 3), T.vector("x"))
    assert not isinstance(info.value, InvalidType)


def test_iterating_a_shape_of_unknown_rank_says_it_is_unknown():
    class RankUnknown:  # what a backend may give: no shape at all yet
        shape = ndim = size = None
        dtype = "float32"

    x, = type_check.TypeInfoTuple.from_arrays((RankUnknown(),))
    with pytest.raises(InvalidType, match=r"in_types\[0\]\.shape is unknown"):
        list(itertools.islice(iter(x.shape), 5))  # bounded: cannot run forever
    with pytest.raises(InvalidType, match=r"in_types\[0\]\.ndim is unknown"):
        type_check.expect(x.ndim == 1)


def test_an_array_scalar_on_the_left_makes_a_condition():
    """np.int64(2) == x.shape used to broadcast over the shape's items into an array."""
    with pytest.raises(InvalidType) as info:
        apply_checked(lambda t: type_check.expect(np.int64(2) == t[0].shape), X)
    assert info.value.expect == "in_types[0].shape == np.int64(2)"
