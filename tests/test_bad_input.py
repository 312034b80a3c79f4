"""Adversarial: bad input at every door of the engine. Each case gives the right
result or a clear error naming the source, the shapes, dtypes and backends; never
a silent wrong value (findings S1, S6, S9, S10, S18, U2, U6)."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg


# ---------------------------------------------------------------------------
# S1: integer and bool data never require grad
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("values", [[1, 2, 3], [True, False]])
def test_integer_and_bool_variables_do_not_require_grad_by_default(values):
    """The default of requires_grad follows the dtype: False for integer and bool data."""
    assert not pg.Variable(np.array(values)).requires_grad


def test_floating_variables_require_grad_by_default():
    """Real and complex floating data require grad by default."""
    assert pg.Variable(np.array([1.0])).requires_grad
    assert pg.Variable(np.array([1.0 + 1j])).requires_grad


def test_requires_grad_true_on_integer_data_is_a_clear_error():
    """requires_grad=True on int64 data raises, naming the dtype and the fix (as PyTorch)."""
    with pytest.raises(TypeError, match="dtype int64; only floating"):
        pg.Variable(np.array([1, 2]), requires_grad=True)
    x = pg.Variable(np.array([1, 2]))
    with pytest.raises(TypeError, match="only floating"):
        x.requires_grad = True


def test_integer_variable_in_a_float_computation_gets_no_truncated_gradient():
    """d/dx sum(0.5 x) for an int x: x gets no gradient at all, never [0 0 0]."""
    x = pg.Variable(np.array([1, 2, 3]))
    w = pg.Variable(np.array([0.5, 0.5, 0.5]))
    pg.sum(x * w).backward()
    assert x.grad is None
    np.testing.assert_allclose(w.grad, [1.0, 2.0, 3.0])


def test_sgd_leaves_an_integer_parameter_alone():
    """An optimizer never turns an int parameter into float64: it has no gradient."""
    w = pg.Variable(np.array([1, 2]))
    v = pg.Variable(np.array([1.0, 1.0]))
    opt = pg.optimizers.SGD(lr=0.1).setup(pg.Link(w=w, v=v))
    opt.update(lambda: pg.sum(w * v))
    assert w.data.dtype == np.int64 and list(w.data) == [1, 2]


# ---------------------------------------------------------------------------
# S10 / U2 / U8: one gate for every gradient entering the graph or .grad
# ---------------------------------------------------------------------------
def test_seed_of_another_kind_of_dtype_is_refused():
    """A complex seed for a real output is an error naming the seed, not a complex parameter."""
    w = pg.Variable(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"the gradient given to backward for .* is complex128 \(2,\) on 'numpy', "
                                         r"expected float64 \(2,\) on 'numpy'"):
        (w * 2).backward(np.array([1 + 1j, 1.0]))


def test_seed_of_another_precision_is_cast():
    """A float64 seed for a float32 output is cast to float32 (as PyTorch): x.grad stays float32."""
    x = pg.Variable(np.ones(2, dtype=np.float32))
    (x * 2).backward(np.ones(2))
    assert x.grad.dtype == np.float32


def test_seed_of_another_backend_is_refused():
    """A dask seed for a numpy graph is an error naming both backends."""
    da = pytest.importorskip("dask.array")
    q = pg.Variable(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"on 'dask', expected float64 \(2,\) on 'numpy'"):
        (q * 2).backward(da.ones(2))


@pytest.mark.parametrize("seed, expected", [(3.0, 3.0), ([1.0, 1.0], None)])
def test_python_number_and_list_seeds_are_converted(seed, expected):
    """backward(3.0) on a scalar and backward([1.0, 1.0]) on a vector work (U2)."""
    a = pg.Variable(np.ones(2))
    if expected is None:
        (a * 2).backward(seed)
        np.testing.assert_allclose(a.grad, [2.0, 2.0])
    else:
        pg.sum(a).backward(seed)
        np.testing.assert_allclose(a.grad, [3.0, 3.0])


def test_seed_of_the_wrong_shape_is_refused():
    """A seed that would broadcast is refused, naming both shapes."""
    a = pg.Variable(np.ones(3))
    with pytest.raises(ValueError, match=r"\(1,\) on 'numpy', expected float64 \(3,\)"):
        (a * 2).backward(np.ones(1))


def test_hook_returning_another_shape_is_refused_naming_the_hook():
    """A variable hook returning a broadcastable wrong shape: an error naming the hook and the
    variable, not a parameter silently reshaped by the optimizer."""
    p = pg.Variable(np.array([1.0, 2.0]))
    h = p * 2

    def widen(g):
        return np.ones((3, 2))

    h.register_hook(widen)
    with pytest.raises(ValueError, match=r"the hook .*widen registered on variable \(shape \(2,\)\) returned is "
                                         r"float64 \(3, 2\) on 'numpy', expected float64 \(2,\)"):
        pg.sum(h * 3).backward()


def test_user_function_returning_an_integer_gradient_is_refused():
    """A user Function's backward returning int64 for a float input is an error naming the Function."""

    class Double(pg.Function):
        def forward(self, inputs):
            return inputs[0] * 2,

        def backward(self, inputs, grad_outputs):
            return (grad_outputs[0] * 2).astype(np.int64),

    x = pg.Variable(np.array([0.3, 0.6]))
    with pytest.raises(ValueError, match=r"Double.backward's gradient for input 0 is int64 \(2,\)"):
        pg.sum(Double()(x) * 0.7).backward()


def test_grad_assignment_is_checked():
    """x.grad = array of another shape or kind is refused; of another precision, cast."""
    x = pg.Variable(np.zeros(3))
    with pytest.raises(ValueError, match=r"the gradient assigned to variable \(shape \(3,\)\) is float64 \(5,\)"):
        x.grad = np.ones(5)
    with pytest.raises(ValueError, match="complex128"):
        x.grad = np.ones(3, dtype=complex)
    x.grad = np.ones(3, dtype=np.float32)
    assert x.grad.dtype == np.float64
    x.grad = None
    assert x.grad is None


# ---------------------------------------------------------------------------
# S9: x.grad is never an array the caller still holds
# ---------------------------------------------------------------------------
def test_leaf_grad_is_not_the_callers_seed_array():
    """Zeroing the seed buffer after backward leaves x.grad as it was."""
    x = pg.Variable(np.zeros(3))
    g = np.ones(3)
    (x + 0.0).backward(g)
    assert x.grad is not g
    g *= 0.0
    np.testing.assert_allclose(x.grad, [1.0, 1.0, 1.0])


def test_leaf_grad_is_not_a_retained_intermediate_grad():
    """Editing h.grad in place (say, clipping it) does not change x.grad."""
    x = pg.Variable(np.zeros(3))
    h = x + 0.0
    (h + 0.0).backward(np.ones(3), retain_grad=True)
    h.grad[:] = 42.0
    np.testing.assert_allclose(x.grad, [1.0, 1.0, 1.0])


def test_leaf_grad_is_not_the_array_a_hook_saw():
    """A hook that keeps the gradient it was shown cannot change the leaf's .grad through it."""
    seen = []
    x = pg.Variable(np.zeros(2))
    h = x + 0.0
    h.register_hook(seen.append)
    (h * 2).backward(np.ones(2))
    seen[0][:] = 7.0
    np.testing.assert_allclose(x.grad, [2.0, 2.0])


# ---------------------------------------------------------------------------
# S18: disconnected inputs and constants
# ---------------------------------------------------------------------------
def test_grad_of_an_unused_input_is_an_error():
    """pg.grad raises for an input the outputs do not depend on (as PyTorch and Theano)."""
    x, w = pg.Variable(np.ones(2)), pg.Variable(np.ones(3))
    with pytest.raises(RuntimeError, match=r"input 1 \(variable \(shape \(3,\)\)\) is not used .* allow_unused=True"):
        pg.grad(pg.sum(x * 2), [x, w])


def test_grad_of_an_unused_input_with_allow_unused_is_none():
    """allow_unused=True gives None for the unused input."""
    x, w = pg.Variable(np.ones(2)), pg.Variable(np.ones(3))
    gx, gw = pg.grad(pg.sum(x * 2), [x, w], allow_unused=True)
    np.testing.assert_allclose(gx.data, [2.0, 2.0])
    assert gw is None


def test_backward_of_a_constant_is_an_error():
    """backward() from a variable that requires no grad and has no creator says there is nothing to do."""
    x = pg.Variable(np.array([1.0]))
    with pg.no_backprop_mode():
        y = x + 1
    with pytest.raises(RuntimeError, match="does not require grad and was made by no function"):
        y.backward()


# ---------------------------------------------------------------------------
# S6: numpy interop
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("values", [[1.0, 2.0], [[1.0, 2.0], [3.0, 4.0]], 5.0])
def test_np_asarray_of_a_variable_is_its_data(values):
    """np.asarray(variable) gives the data, of the right shape (never an empty array), for a
    variable that needs no gradient; for one that does, after detach()."""
    v = pg.Variable(np.array(values), requires_grad=False)
    np.testing.assert_array_equal(np.asarray(v), np.array(values))
    w = pg.Variable(np.array(values))
    np.testing.assert_array_equal(np.asarray(w.detach()), np.array(values))
    np.testing.assert_array_equal(w.detach().numpy(), np.array(values))
    with pg.no_backprop_mode():  # nothing is recorded: nothing can be lost
        np.testing.assert_array_equal(np.asarray(w), np.array(values))
    assert len(pg.Variable(np.zeros((2, 3)))) == 6  # len() stays the element count (Chainer)


@pytest.mark.parametrize("convert", [np.asarray, np.array, lambda v: np.array([v, v]), lambda v: v.numpy(),
                                     lambda v: np.exp(np.asarray(v))],
                         ids=["asarray", "array", "list", "numpy()", "detour"])
def test_np_asarray_of_a_variable_that_requires_grad_is_refused(convert):
    """PyTorch's rule: numpy cannot record a graph, so converting a variable that requires grad
    (a leaf or a result) is refused, naming the variable and the ways out, never a result whose
    gradient is silently missing."""
    x = pg.Variable(np.array([1.0, 2.0]), name="x")
    for v in (x, pg.sum(x * x)):
        with pytest.raises(RuntimeError, match=r"polygrad: .* of variable .*which requires grad: numpy cannot "
                                               r"record a graph.*x\.detach\(\)"):
            convert(v)


def test_np_array_of_a_list_of_scalar_losses_after_detach():
    """np.array([loss, loss]) of two detached scalar Variables is their values (float(loss) too)."""
    loss = pg.sum(pg.Variable(np.array([1.0, 2.0])) ** 2)
    np.testing.assert_array_equal(np.array([loss.detach(), loss.detach()]), [5.0, 5.0])
    np.testing.assert_array_equal(np.array([float(loss), float(loss)]), [5.0, 5.0])


def test_np_asarray_refuses_clearly_where_arrays_do_not_convert():
    """A Variable whose data has no __array__ (a symbolic one) names its backend and the fix."""
    from polygrad import symbolic as T

    with pytest.raises(TypeError, match="backend 'symbolic', whose arrays do not convert to numpy"):
        np.asarray(T.vector("x"))


# ---------------------------------------------------------------------------
# S7: results of integer or boolean dtype carry no gradient
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda x: pg.astype(x, pg.int64),
    lambda x: pg.astype(x, pg.bool),
    lambda x: pg.sum(x, dtype=pg.int64),
    lambda x: pg.cumulative_sum(x, dtype=pg.int64),
    lambda x: pg.asarray(x, dtype="int64"),
])
def test_a_cast_to_an_integer_or_bool_dtype_carries_no_gradient(make):
    """astype / sum / cumulative_sum / asarray to int64 or bool: no requires_grad, no creator (as trunc)."""
    x = pg.Variable(np.array([1.7, 2.2]))
    q = make(x)
    assert not q.requires_grad and q.creator is None


def test_float_of_int_of_x_has_no_gradient_path():
    """d/dx 3 * float(int(x)) is 0 almost everywhere: x is not reached (was 3)."""
    x = pg.Variable(np.array([1.7, 2.2]))
    y = pg.sum(pg.astype(pg.astype(x, pg.int64), pg.float64) * 3)
    assert not y.requires_grad
    with pytest.raises(RuntimeError, match="nothing to differentiate"):
        y.backward()
    assert x.grad is None


def test_a_cast_between_floating_dtypes_keeps_its_gradient():
    """astype(x, float32) stays differentiable: x.grad is float64."""
    x = pg.Variable(np.array([1.5, 2.5]))
    pg.sum(pg.astype(x, pg.float32) * 2).backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_allclose(x.grad, [2.0, 2.0])


# ---------------------------------------------------------------------------
# U6: data that is no array of the standard
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("data", [np.str_("abc"), np.array(["a", "b"]), np.array([1.0, 2.0], dtype=object)])
def test_variable_of_strings_or_objects_is_refused_at_once(data):
    """Strings and object arrays are refused when the Variable is made, naming the dtype."""
    with pytest.raises(TypeError, match="no dtype of the Array API standard"):
        pg.Variable(data)


def test_variable_of_a_python_number_is_refused_with_the_fix():
    """pg.Variable(3.0) says to make an array with pg.asarray."""
    with pytest.raises(TypeError, match=r"pg.asarray"):
        pg.Variable(3.0)


def test_mixing_an_eager_array_into_a_symbolic_graph_advises_a_shared_variable():
    """v * np.ones(3) on a symbolic v says to use pg.shared, not pg.to_backend(x, 'symbolic') (U3)."""
    from polygrad import symbolic as T

    with pytest.raises(TypeError, match=r"pg\.shared") as err:
        T.vector("v") * np.ones(3)
    assert "to_backend" not in str(err.value)


@pytest.mark.parametrize("call", [lambda x: pg.moveaxis(x, 5, 0), lambda x: pg.moveaxis(x, 0, -4),
                                  lambda x: pg.permute_dims(x, (0, 1, 5)), lambda x: pg.permute_dims(x, (0, 1, -4))],
                         ids=["moveaxis_source", "moveaxis_destination", "permute_dims_positive", "permute_dims_negative"])
def test_an_axis_out_of_bounds_is_an_error_never_wrapped_around(call):
    """moveaxis(x, 5, 0) on 3 dimensions used to move axis 2 (5 % 3): an axis outside [-ndim, ndim)
    is an error naming the function; negative axes in bounds still count from the end."""
    x = pg.Variable(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match=r"polygrad\.(moveaxis|permute_dims): axis -?\d is out of bounds .* 3 dimensions"):
        call(x)
    assert pg.moveaxis(x, -1, 0).shape == (4, 2, 3) and pg.permute_dims(x, (-1, 0, 1)).shape == (4, 2, 3)


@pytest.mark.parametrize("call, message", [
    (lambda x: pg.sin([1.0, 2.0]), r"polygrad: sin: input 0 \(list\): no backend claims"),
    (lambda x: pg.add(x, None), r"polygrad: add: input 1 \(NoneType\): got None"),
    (lambda x: pg.matmul(x, "ab"), r"polygrad: matmul: input 1 \(str\): no backend claims"),
], ids=["list", "none", "str"])
def test_an_input_no_backend_claims_names_the_op_and_the_input(call, message):
    """A list, None or a string as an op's input: the error named neither the op nor which input."""
    with pytest.raises(TypeError, match=message):
        call(pg.asarray([1.0, 2.0]))


def test_a_backward_error_of_a_rule_that_kept_no_input_shows_no_empty_description():
    """The message read "failed on backend 'numpy' for () with {'upper': False}"."""
    x = pg.Variable(np.eye(3) * 2 + 0.5j)
    y = pg.linalg.cholesky(x)
    with pytest.raises(NotImplementedError) as info:
        pg.sum(pg.real(y)).backward()
    assert "for ()" not in str(info.value) and "linalg_cholesky in backward (input 0)" in str(info.value)


def test_reciprocal_of_integers_is_refused():
    """numpy's reciprocal of integers is an integer division: pg.reciprocal of [[1, 2], [3, 4]]
    gave [[1, 0], [0, 0]]. The standard's takes floating dtypes (array_api_strict refuses too)."""
    with pytest.raises(TypeError, match="reciprocal: x must have a floating dtype.*got int64"):
        pg.reciprocal(pg.Variable(np.array([[1, 2], [3, 4]])))
    np.testing.assert_array_equal(pg.reciprocal(pg.Variable(np.array([2.0, 4.0]))).data, [0.5, 0.25])


@pytest.mark.parametrize("backend", ["numpy", "dask"])
@pytest.mark.parametrize("call, message", [
    (lambda: pg.functions.bernoulli(pg.Variable(pg.asarray([0.5, 1.5]))), r"Bernoulli: p must be in \[0, 1\], got 1.5"),
    (lambda: pg.functions.bernoulli(pg.Variable(pg.asarray([0.5, float("nan")]))), r"p must be in \[0, 1\], got nan"),
    (lambda: pg.functions.categorical(pg.Variable(pg.asarray([[-0.5, 1.5]]))), "probs must be finite and non-negative, got -0.5"),
    (lambda: pg.functions.normal(pg.Variable(pg.asarray([0.0, 0.0])), pg.Variable(pg.asarray([-1.0, 1.0]))),
     "std must be non-negative, got -1.0"),
    (lambda: pg.distributions.Normal(0.0, -1.0).sample(), "std must be non-negative, got -1.0"),
    (lambda: pg.functions.categorical(pg.Variable(pg.asarray([[0.0, 0.0, 0.0]]))), "each row of probs must have a positive sum"),
    (lambda: pg.functions.categorical(pg.Variable(pg.asarray([[float("inf"), 1.0]]))), "probs must be finite and non-negative"),
    (lambda: pg.functions.normal(pg.Variable(pg.asarray([float("nan")])), pg.Variable(pg.asarray([1.0]))),
     "mean must not be NaN"),
], ids=["p_above_1", "p_nan", "negative_prob", "negative_std", "negative_std_number", "zero_row", "inf_prob", "nan_mean"])
def test_a_draw_with_parameters_outside_their_range_is_refused(backend, call, message):
    """F.bernoulli of p = 1.5 drew 1 always (of NaN, 0), a negative probability or std drew from
    no distribution: refused as torch.distributions refuses them (on dask where computed)."""
    with pg.using_backend(backend):
        with pytest.raises(ValueError, match=message):
            pg.compute(call())


@pytest.mark.parametrize("call, message", [
    (lambda xp: xp.asarray(None), "asarray: None makes an array of dtype object"),
    (lambda xp: xp.asarray([1, "a"]), r"asarray: \[1, 'a'\] makes an array of dtype <U21"),
    (lambda xp: xp.full((2,), "a"), "full: fill_value must be a number, got 'a'"),
    (lambda xp: xp.full_like(xp.asarray([1.0]), None), "full_like: fill_value must be a number, got None"),
    (lambda xp: xp.full((2,), np.array("a")), r"full: array\('a', dtype='<U1'\) makes an array of dtype <U1"),
    (lambda xp: xp.full((2,), __import__("decimal").Decimal(1)), "full: Decimal.* makes an array of dtype object"),
], ids=["asarray_none", "asarray_text", "full_text", "full_like_none", "full_0d_text", "full_decimal"])
def test_arrays_of_dtypes_outside_the_standard_are_refused_where_made(call, message):
    """numpy made object and string arrays (Variables of them failed later, deep inside some op),
    and NaN of full_like(x, None)."""
    import polygrad.array_api as xp

    with pytest.raises(TypeError, match=message):
        call(xp)


@pytest.mark.parametrize("backend", ["numpy", "dask"])
def test_a_fill_value_that_does_not_fit_the_dtype_is_refused(backend):
    """x.fill_(1j) of a float array gave zeros with numpy's ComplexWarning; an int8 fill_(300) on
    dask failed only when computed (as x[key] = number did). A 0-d Variable fills as before."""
    import polygrad.array_api as xp

    with pg.using_backend(backend):
        a = pg.Variable(pg.asarray([1.0, 2.0]), requires_grad=False)
        with pytest.raises(TypeError, match="fill_ with fill_value=1j: a complex value"):
            a.fill_(1j)
        i = pg.Variable(pg.asarray(np.array([1, 2], dtype=np.int8)), requires_grad=False)
        with pytest.raises(OverflowError, match="300 is out of the range of dtype int8"):
            i.fill_(300)
        with pytest.raises(TypeError, match="full with fill_value=1j"):
            xp.full((2,), 1j, dtype=xp.float64)
        assert (a.version, i.version) == (0, 0)
        three = xp.full((2,), pg.Variable(pg.asarray(3.0), requires_grad=False))
        np.testing.assert_array_equal(np.asarray(pg.to_backend(three, "numpy").data), [3.0, 3.0])


@pytest.mark.parametrize("backend", ["numpy", "dask"])
@pytest.mark.parametrize("call, error, message", [
    (lambda xp: xp.eye(-1), ValueError, "eye: n_rows must be an int of at least 0, got -1"),
    (lambda xp: xp.eye(3, k=1.5), TypeError, "eye: k must be an int, got 1.5"),
    (lambda xp: xp.linspace(0, 1, 2.5), TypeError, "linspace: num must be an int, got 2.5"),
    (lambda xp: xp.fft.fftfreq(-2), ValueError, "fft.fftfreq: n must be an int of at least 1, got -2"),
    (lambda xp: xp.fft.rfftfreq(0), ValueError, "fft.rfftfreq: n must be an int of at least 1, got 0"),
], ids=["eye", "eye_k", "linspace", "fftfreq", "rfftfreq"])
def test_creation_sizes_are_checked_where_they_enter(backend, call, error, message):
    """dask made (0, 0) of eye(-1), two points of linspace(0, 1, 2.5), and empty frequencies
    of fftfreq(-2); numpy refuses each (fftfreq(0) with a ZeroDivisionError)."""
    import polygrad.array_api as xp

    with pg.using_backend(backend):
        with pytest.raises(error, match=message):
            call(xp)


def test_an_op_the_namespace_lacks_is_named_with_the_backend():
    """dask's namespace has no linalg.det: a bare AttributeError from array_api_compat's module."""
    with pg.using_backend("dask"):
        x = pg.Variable(pg.asarray(np.eye(2)))
        with pytest.raises(NotImplementedError, match="linalg_det is not available on backend 'dask'.*no linalg.det"):
            pg.linalg.det(x)


@pytest.mark.parametrize("backend", ["numpy", "dask", "strict"])
@pytest.mark.parametrize("fn", [pg.cumulative_sum, pg.cumulative_prod])
def test_cumulative_functions_of_a_0d_array_are_refused(backend, fn):
    """The standard's take one or more dimensions: a 0-d array gave (1,) on numpy and then a
    backward error (a (1,) gradient for a () input), and failed inside dask and strict."""
    x = pg.Variable(pg.asarray(np.array(3.0), backend=backend))
    with pytest.raises(ValueError, match=rf"polygrad.{fn.__name__}: x must have one or more dimensions"):
        fn(x)
    np.testing.assert_array_equal(pg.to_backend(fn(pg.reshape(x, (1,))).data, "numpy"), [3.0])


def test_an_operation_on_a_variable_without_data_says_it_has_none():
    """``pg.Variable()`` is an uninitialized parameter (Linear(None, n) holds one); an op on it named
    symbolic graphs and unknown dimensions, which have nothing to do with it."""
    w = pg.Variable(name="W")
    with pytest.raises(TypeError, match=r"multiply: input 0 is variable 'W' .*has no data yet"):
        w * 2
    with pytest.raises(TypeError, match=r"add: input 1 is variable .*has no data yet"):
        pg.asarray([1.0]) + pg.Variable()


def test_an_error_in_a_gradient_rule_describes_its_inputs_without_a_stray_article():
    """A rule's placeholders for inputs it did not keep belong to no backend; they were described as
    "a array shape (4,)". The message names the backend the rule ran on, and each of them as "array"."""
    x = pg.Variable(pg.asarray([1.0, 2.0, 3.0, 4.0]))
    v = pg.Variable(pg.asarray([5.0, 7.0]))
    h = x * 1.0
    h[pg.asarray([0, 0])] = v  # repeated positions: v has no gradient there
    with pytest.raises(ValueError, match=r"failed on backend 'numpy' for \(array shape \(4,\) dtype float64; "
                                         r"array shape \(2,\) dtype float64; numpy array shape \(2,\)") as info:
        pg.sum(h).backward()
    assert "a array" not in str(info.value)
