"""pg.grad: gradients returned without touching .grad, unused inputs, grad_outputs,
intermediates, several outputs, higher orders with create_graph, freeing the
graph, and bad inputs, on numpy and array_api_strict."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F

from conftest import arr
from conftest import assert_values_close as assert_close


def test_grad_returns_gradients_without_touching_dot_grad(xp):
    """pg.grad returns d out / d inputs and leaves every .grad as it was."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    w = pg.Variable(arr(xp, [3.0, 4.0]))
    w.grad = arr(xp, [7.0, 7.0])
    gx, gw = pg.grad(pg.sum(x * w), [x, w])
    assert_close(gx, np.array([3.0, 4.0]))
    assert_close(gw, np.array([1.0, 2.0]))
    assert x.grad is None
    assert_close(w.grad, np.array([7.0, 7.0]))


def test_grad_of_an_output_made_without_a_graph_says_so(xp):
    """pg.grad of an output made under no_backprop_mode raises as backward does (not "input 0 is not used")."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    with pg.no_backprop_mode():
        y = pg.sum(x * x)
    with pytest.raises(RuntimeError, match="does not require grad and was made by no function"):
        pg.grad(y, [x])
    with pytest.raises(RuntimeError, match="does not require grad and was made by no function"):
        pg.grad([y, y * 2], [x])
    assert pg.grad(y, [x], allow_unused=True) == [None]  # asked for: None where no gradient flows


def test_grad_leaves_grad_of_other_leaves_alone(xp):
    """Leaves not asked for get no .grad from pg.grad."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    other = pg.Variable(arr(xp, [5.0, 6.0]))
    pg.grad(pg.sum(x * other), [x])
    assert other.grad is None


def test_grad_none_for_unused_input(xp):
    """With allow_unused=True, an input the output does not depend on gets None (else pg.grad raises)."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    unused = pg.Variable(arr(xp, [1.0]))
    gx, gu = pg.grad(pg.sum(x * x), [x, unused], allow_unused=True)
    assert_close(gx, np.array([2.0, 4.0]))
    assert gu is None


def test_grad_of_single_variable_returns_list(xp):
    """pg.grad(y, x) with one Variable input returns a one-element list of Variables."""
    x = pg.Variable(arr(xp, 3.0))
    out = pg.grad(x * x, x)
    assert isinstance(out, list) and len(out) == 1
    assert isinstance(out[0], pg.Variable)
    assert_close(out[0], np.array(6.0))


def test_grad_with_grad_outputs(xp):
    """grad_outputs weights a non-scalar output."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    (g,) = pg.grad(x * x, [x], grad_outputs=[arr(xp, [10.0, 100.0])])
    assert_close(g, np.array([20.0, 400.0]))


def test_grad_with_respect_to_intermediate(xp):
    """The gradient with respect to an intermediate Variable is the one flowing into it."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    h = x * 3.0
    (gh,) = pg.grad(pg.sum(h * h), [h])
    assert_close(gh, np.array([6.0, 12.0]))


def test_grad_several_outputs_sum(xp):
    """With several outputs the gradients add up."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    (g,) = pg.grad([pg.sum(x * x), pg.sum(3.0 * x)], [x])
    assert_close(g, np.array([5.0, 7.0]))


def test_grad_without_create_graph_has_no_graph(xp):
    """Without create_graph the gradients are Variables that do not require grad."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    (g,) = pg.grad(pg.sum(x ** 3), [x])
    assert g.requires_grad is False
    assert g.creator is None


def test_grad_create_graph_second_derivative(xp):
    """With create_graph, d/dx of d(x**3)/dx is 6x."""
    x = pg.Variable(arr(xp, [1.0, -2.0, 3.0]))
    (g,) = pg.grad(pg.sum(x ** 3), [x], create_graph=True)
    assert g.requires_grad is True
    assert_close(g, 3 * np.array([1.0, 4.0, 9.0]))
    (h,) = pg.grad(pg.sum(g), [x])
    assert_close(h, 6 * np.array([1.0, -2.0, 3.0]))


def test_grad_create_graph_third_derivative(xp):
    """Three nested pg.grad calls give d3(x**3)/dx3 = 6."""
    x = pg.Variable(arr(xp, [1.0, -2.0, 3.0]))
    (g,) = pg.grad(pg.sum(x ** 3), [x], create_graph=True)
    (h,) = pg.grad(pg.sum(g), [x], create_graph=True)
    (k,) = pg.grad(pg.sum(h), [x])
    assert_close(k, np.full(3, 6.0))


def test_grad_create_graph_through_nn_functions(xp):
    """Second derivative of sum(sigmoid(x)) is s (1 - s) (1 - 2 s)."""
    xs = np.array([-1.0, 0.5, 2.0])
    x = pg.Variable(arr(xp, xs))
    (g,) = pg.grad(pg.sum(F.sigmoid(x)), [x], create_graph=True)
    (h,) = pg.grad(pg.sum(g), [x])
    s = 1 / (1 + np.exp(-xs))
    assert_close(h, s * (1 - s) * (1 - 2 * s))


def test_grad_frees_graph_unless_retained(xp):
    """A second pg.grad through the same graph fails unless retain_graph=True was given."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = pg.sum(x * x * x)
    pg.grad(y, [x], retain_graph=True)
    (g,) = pg.grad(y, [x])
    assert_close(g, np.array([3.0, 12.0]))
    with pytest.raises(RuntimeError):
        pg.grad(y, [x])


def test_grad_refuses_non_variable_inputs(xp):
    """Inputs must be Variables."""
    x = pg.Variable(arr(xp, [1.0]))
    with pytest.raises(TypeError, match="Variable"):
        pg.grad(pg.sum(x), [arr(xp, [1.0])])


def test_an_input_listed_twice_gets_its_gradient_twice():
    """pg.grad(y, [x, x]) gave [None, g] (or an error): the pass kept one place per position."""
    x = pg.Variable(np.array([1.0, 2.0]))
    g1, g2 = pg.grad(pg.sum(x * x), [x, x])
    np.testing.assert_array_equal(g1.data, [2.0, 4.0])
    np.testing.assert_array_equal(g2.data, [2.0, 4.0])
    assert g1.data is not g2.data
    h1, h2 = pg.grad(pg.sum(x * x * x), [x, x], create_graph=True)
    np.testing.assert_array_equal(pg.grad(pg.sum(h2), [x])[0].data, [6.0, 12.0])


def test_pg_grad_leaves_a_retained_grad_alone():
    x = pg.Variable(np.array([1.0, 2.0]))
    h = x * 2.0
    y = pg.sum(h * h)
    y.backward(retain_grad=True, retain_graph=True)
    np.testing.assert_array_equal(h.grad, [4.0, 8.0])
    pg.grad(y, [x])
    np.testing.assert_array_equal(h.grad, [4.0, 8.0])  # was cleared: pg.grad touches no .grad


def test_pg_grad_of_an_intermediate_with_a_hook_applies_the_hook():
    """A hook on h changes the gradient pg.grad returns for h, as for a leaf (and as it changes
    what reaches x): h's result used to leave the hook out."""
    x = pg.Variable(np.array([1.0, 2.0]))
    h = x * 3.0
    h.register_hook(lambda g: g * 10)
    gh, gx = pg.grad(pg.sum(h * h), [h, x])
    np.testing.assert_array_equal(gh.data, [60.0, 120.0])
    np.testing.assert_array_equal(gx.data, [180.0, 360.0])


def test_pg_grad_runs_only_what_the_requested_inputs_need():
    """pg.grad(y, [h]) for an intermediate h ran the whole graph behind h: x's hooks fired, and
    exp's saved value was freed, so a later backward through it raised "a second time". Now, as
    in PyTorch, the nodes below h are not visited and h's own node only gives its gradient."""
    x = pg.Variable(np.array([1.0, 2.0]))
    fired = []
    x.register_hook(lambda g: fired.append(g))
    h = pg.exp(x)
    y = pg.sum(h * h)
    (gh,) = pg.grad(y, [h])
    np.testing.assert_allclose(gh.data, 2 * np.exp([1.0, 2.0]))
    assert fired == [] and x.grad is None
    pg.sum(h).backward()  # through exp: what it saved is still there
    np.testing.assert_allclose(x.grad, np.exp([1.0, 2.0]))
    assert len(fired) == 1
    with pytest.raises(RuntimeError, match="second time"):
        pg.grad(y, [h])  # the nodes above h ran and were freed, as before


def test_pg_grad_with_inputs_on_one_path_and_second_order():
    x = pg.Variable(np.array([1.0, 2.0]))
    h = x * 3.0
    gh, gx = pg.grad(pg.sum(h * h), [h, x])  # h's node must run for x, and gives h's gradient too
    np.testing.assert_array_equal(gh.data, [6.0, 12.0])
    np.testing.assert_array_equal(gx.data, [18.0, 36.0])
    s = pg.sin(x)
    (gs,) = pg.grad(pg.sum(s ** 3), [s], create_graph=True)
    np.testing.assert_allclose(gs.data, 3 * np.sin([1.0, 2.0]) ** 2)
    (gx2,) = pg.grad(pg.sum(gs), [x])  # through the graph of gs: 6 sin(x) cos(x)
    np.testing.assert_allclose(gx2.data, 6 * np.sin([1.0, 2.0]) * np.cos([1.0, 2.0]))


# ---------------------------------------------------------------------------
# Higher-order gradients against jax (an adversarial pass): what went wrong silently
# ---------------------------------------------------------------------------
def test_an_in_place_change_after_a_create_graph_gradient_is_refused():
    """The gradient's graph saved h through a stand-in Variable with a counter of its own:
    h *= 3 then went unnoticed, and the Hessian-vector product read the changed h."""
    x = pg.Variable(np.array([0.5, -1.2, 2.0]))
    h = x * 2.0
    g, = pg.grad(pg.sum(pg.sin(h)), [x], create_graph=True)
    with pg.no_backprop_mode():
        h *= 3.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        pg.grad(pg.sum(g), [x])


def test_the_mixed_second_derivative_of_pow_at_a_zero_exponent():
    """d2/dy dx of x ** y at y = 0 is 1/x; a where() on y == 0 in the base's rule gave 0, so
    the Hessian was not symmetric."""
    for first, second in ((0, 1), (1, 0)):
        x, y = pg.Variable(np.array([2.0, 4.0])), pg.Variable(np.array([0.0, 0.0]))
        v = (x, y)
        g, = pg.grad(pg.sum(x ** y), [v[first]], create_graph=True)
        h, = pg.grad(pg.sum(g), [v[second]])
        np.testing.assert_allclose(h.data, [0.5, 0.25])
    x, y = pg.Variable(np.array([0.0])), pg.Variable(np.array([0.0]))
    pg.sum(x ** y).backward()
    assert x.grad[0] == 0.0 and y.grad[0] == 0.0  # 0 ** 0: no nan


def _hessian(f, point):
    v = pg.Variable(np.array(point))
    g, = pg.grad(f(v[0], v[1]), [v], create_graph=True)
    return np.array([pg.grad(g[i], [v], retain_graph=True)[0].data for i in range(2)])


@pytest.mark.parametrize("f, at_34", [
    (pg.hypot, np.array([[16.0, -12.0], [-12.0, 9.0]]) / 125),
    (pg.atan2, np.array([[-24.0, -7.0], [-7.0, 24.0]]) / 625),
    (pg.pow, None)], ids=["hypot", "atan2", "pow"])
def test_second_derivatives_at_the_zero_gradient_conventions_are_zero(f, at_34):
    """hypot, atan2 and pow choose gradient 0 at (0, 0); their rules divided by a denominator
    made 1 there, which left the numerator (g x), so the Hessian was g I for hypot, [[0, 1], [-1,
    0]] (antisymmetric) for atan2, [[0, 1], [0, 0]] for pow. The chosen 0 is now a constant."""
    assert np.array_equal(_hessian(f, [0.0, 0.0]), np.zeros((2, 2)))
    if at_34 is None:  # x ** y at (2, 3)
        ln2 = np.log(2.0)
        at_34, point = np.array([[12.0, 4 * (1 + 3 * ln2)], [4 * (1 + 3 * ln2), 8 * ln2 ** 2]]), [2.0, 3.0]
    else:
        point = [3.0, 4.0]
    np.testing.assert_allclose(_hessian(f, point), at_34, rtol=1e-14)


def test_second_derivative_of_complex_abs_at_zero_is_zero():
    """abs's rule g z / |z| took |z| as 1 at z = 0, which left g z there: its derivative was 1."""
    z = pg.Variable(np.array([0j, 3 + 4j]))
    g, = pg.grad(pg.sum(pg.abs(z)), [z], create_graph=True)
    h, = pg.grad(pg.sum(pg.real(g) + pg.imag(g)), [z])
    np.testing.assert_allclose(h.data, [0j, 0.032 - 0.024j], rtol=1e-14)


def test_identity_is_differentiable_to_any_order():
    x = pg.Variable(np.array([1.0, 2.0]))
    g, = pg.grad(pg.sum(F.identity(x) ** 3 + x ** 3), [x], create_graph=True)
    h, = pg.grad(pg.sum(g), [x])
    np.testing.assert_allclose(h.data, [12.0, 24.0])  # was 6x: identity's path was left out


@pytest.mark.filterwarnings("ignore:polygrad. backward.create_graph=True. made:UserWarning")  # (the cycle's)
def test_a_second_derivative_through_a_user_function_raises():
    """A user Function's backward runs on arrays; its path was left out of a second derivative,
    silently (6x + nothing where 12x is right). PyTorch's once_differentiable raises."""

    class Cube(pg.Function):
        def forward(self, inputs):
            self.retain_inputs((0,))
            return inputs[0] ** 3,

        def backward(self, inputs, grad_outputs):
            return 3 * inputs[0] ** 2 * grad_outputs[0],

    x = pg.Variable(np.array([1.0, 2.0]))
    g, = pg.grad(pg.sum(Cube()(x) + x ** 3), [x], create_graph=True)
    np.testing.assert_allclose(g.data, [6.0, 24.0])
    with pytest.raises(RuntimeError, match="Cube is differentiable once"):
        pg.grad(pg.sum(g), [x])
    y = pg.sum(Cube()(x))
    x.grad = None
    y.backward(create_graph=True)  # a first derivative with create_graph is still fine
    np.testing.assert_allclose(x.grad.data, [3.0, 12.0])


def test_a_grad_outputs_variable_of_another_precision_keeps_its_path():
    """A float32 u given for a float64 output was cast as a bare array: the gradient with
    respect to u was None ('not used to compute the outputs')."""
    x = pg.Variable(np.array([0.5, -1.2, 2.0]))
    u = pg.Variable(np.array([1.0, 0.3, -0.7], dtype=np.float32))
    g, = pg.grad(pg.exp(x), [x], grad_outputs=u, create_graph=True)
    gu, = pg.grad(pg.sum(g), [u])
    assert gu.dtype == np.float32
    np.testing.assert_allclose(gu.data, np.exp(x.data), rtol=1e-6)


def test_mixed_precision_higher_order_gradients():
    """create_graph refused a float64 gradient for a float32 input ('is float64, expected
    float32'), also for a leaf that was not asked for (a float32 Linear's W fed float64 data:
    the gradient-penalty pattern); an intermediate's gradient came back float64."""
    import polygrad.links as L

    x = pg.Variable(np.ones((2, 3), np.float32))
    c = pg.asarray(np.ones((3, 2)))
    g, = pg.grad(pg.sum(pg.sin(pg.tensordot(x, c, axes=1))), [x], create_graph=True)
    assert g.dtype == np.float32
    h = pg.sin(x)
    gh, = pg.grad(pg.sum(pg.tensordot(h, c, axes=1)), [h])
    assert gh.dtype == np.float32
    lin = L.Linear(3, 1)
    xx = pg.Variable(np.ones((4, 3)))
    gx, = pg.grad(pg.sum(pg.tanh(lin(xx))), [xx], create_graph=True)
    assert lin.W.grad is None
    pg.sum(gx * gx).backward()
    assert lin.W.grad.dtype == np.float32 and lin.W.grad.shape == (1, 3)


def test_pg_grad_runs_only_the_rules_of_inputs_it_needs():
    """pg.grad ran every rule of a node on the path: a weight's gradient was computed for a
    gradient with respect to the data only, and setitem's refusal of repeated positions for
    its values fired for a gradient with respect to h alone."""
    from polygrad.extend import Op, apply, defvjp

    calls = []
    op = defvjp(Op("test_grad_two_rules", lambda xp, x, w: x * w),
                lambda o, g, ans, x, w: calls.append("x") or g * w,
                lambda o, g, ans, x, w: calls.append("w") or g * x, saves="xy")
    try:
        x, w = pg.Variable(np.array([1.0, 2.0])), pg.Variable(np.array([3.0, 4.0]))
        gx, = pg.grad(pg.sum(apply(op, (x, w))), [x])
        np.testing.assert_array_equal(gx.data, [3.0, 4.0])
        assert calls == ["x"]
    finally:
        from polygrad.core.op import REGISTRY

        REGISTRY.pop("test_grad_two_rules", None)
    h_, v = pg.Variable(np.arange(5.0)), pg.Variable(np.array([1.0, 2.0, 4.0]))
    h = h_ * 1.0
    h[pg.Variable(np.array([1, 1, 3]), requires_grad=False)] = v
    gh, = pg.grad(pg.sum(h * h), [h_])
    np.testing.assert_array_equal(gh.data, [0.0, 0.0, 4.0, 0.0, 8.0])


@pytest.mark.filterwarnings("ignore:polygrad. backward.create_graph=True. made:UserWarning")  # (the cycle's)
def test_backward_with_create_graph_frees_when_told_to_as_pg_grad_does():
    """backward(create_graph=True, retain_graph=False) kept the graph, where pg.grad with the same
    arguments frees it (PyTorch: retain_graph defaults to create_graph; an explicit False frees)."""
    for run in (lambda y, x: y.backward(create_graph=True, retain_graph=False),
                lambda y, x: pg.grad(y, [x], create_graph=True, retain_graph=False)):
        x = pg.Variable(np.array([1.0, 2.0]))
        y = pg.sum(pg.sin(x * 2.0))
        run(y, x)
        with pytest.raises(RuntimeError, match="a second time"):
            y.backward()
    x = pg.Variable(np.array([1.0, 2.0]))
    y = pg.sum(pg.sin(x * 2.0))
    y.backward(create_graph=True)  # the default keeps it, as PyTorch's
    y.backward()


def test_a_zero_d_float64_gradient_keeps_its_graph():
    """A 0-d float64 result holds a NumPy scalar, which is a Python float: admit() took such a
    gradient for a number and rebuilt it as an array, so a hook's gradient under create_graph
    and a grad_outputs that carries a graph lost their paths (the second derivative came out
    None; the same programs on shape (1,) gave 27 and 0.9)."""
    x = pg.Variable(pg.asarray(0.5))
    x.register_hook(lambda g: g * 3.0)
    (g,) = pg.grad(x ** 3, [x], create_graph=True)
    assert g.creator is not None
    (h,) = pg.grad(g, [x])
    # g = 3 * 3x^2 (the hook); its derivative 18x = 9, scaled by the hook again in this backward
    np.testing.assert_allclose(float(h.array), 27.0)
    x, w = pg.Variable(pg.asarray(0.3)), pg.Variable(pg.asarray(2.0))
    (g,) = pg.grad(x * x, [x], grad_outputs=[w * 1.5], create_graph=True)
    (dw,) = pg.grad(g, [w])
    np.testing.assert_allclose(float(dw.array), 0.9)


def _tripling_row(name):
    """A row whose rule writes into its incoming gradient (``g *= 3``), as a careless rule may."""
    from polygrad.extend import Op, defvjp

    def rule(o, g, ans, x):
        g *= 3.0
        return g

    return defvjp(Op(name, lambda xp, x: 3 * x), rule)


def test_grad_outputs_are_never_written_by_a_rule():
    """A rule that wrote into its g changed the caller's grad_outputs array when g was the seed
    (the gradients the engine computes are no concern of the caller), so a second pass from the
    same seed gave 9 where 3 is right, and pg.grad returned the caller's array itself."""
    from polygrad.core.op import REGISTRY
    from polygrad.extend import apply

    row = _tripling_row("grad_test_tripling")
    try:
        x = pg.Variable(np.array([1.0, 2.0]))
        seed = np.array([1.0, 1.0])
        g1 = pg.grad([apply(row, (x,))], [x], grad_outputs=[seed])[0]
        g2 = pg.grad([apply(row, (x,))], [x], grad_outputs=[seed])[0]
        (g3,) = pg.grad([apply(row, (x,))], [x], grad_outputs=[seed], create_graph=True)
        apply(row, (x,)).backward(seed)
        np.testing.assert_array_equal(seed, [1.0, 1.0])
        for g in (g1, g2, g3):
            np.testing.assert_array_equal(g.array, [3.0, 3.0])
        np.testing.assert_array_equal(x.grad, [3.0, 3.0])
        y = x * 1.0
        (gy,) = pg.grad([y], [y], grad_outputs=[seed])  # no rule runs: the seed is the result
        assert not np.shares_memory(gy.array, seed)
    finally:
        REGISTRY.pop("grad_test_tripling", None)


def test_a_seed_that_is_a_variable_keeps_its_graph_under_create_graph():
    """The copy of a Variable seed is recorded: the gradient with respect to the seed (double
    backprop through grad_outputs) still reaches it."""
    x = pg.Variable(np.array([1.0, 2.0]))
    v = pg.Variable(np.array([0.5, -1.0]))
    (gx,) = pg.grad([x * x], [x], grad_outputs=[v], create_graph=True)
    (gv,) = pg.grad([pg.sum(gx)], [v])
    np.testing.assert_allclose(gv.array, [2.0, 4.0])
    np.testing.assert_array_equal(v.array, [0.5, -1.0])
    y = x * x
    with pg.no_backprop_mode():  # (the pass records under create_graph: so does the seed's copy)
        (gx,) = pg.grad([y], [x], grad_outputs=[v], create_graph=True)
    (gv,) = pg.grad([pg.sum(gx)], [v])
    np.testing.assert_allclose(gv.array, [2.0, 4.0])
