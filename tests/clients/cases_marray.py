"""marray's masked arrays over Variables: ``marray.masked_namespace(x.__array_namespace__())``.

Masked arrays whose data are Variables: elementwise functions, reductions (which skip
the masked elements), indexing, item assignment, manipulation and linear algebra, each
compared with marray over numpy (data and mask) and differentiated through the data.
"""

from __future__ import annotations

import numpy as np

from clients.harness import Case, Lazy, normal, positive

REQUIRES = ("marray", "scipy")

marray = Lazy("marray")
xpc = Lazy("array_api_compat")


def masked(x):
    """The masked namespace over the namespace of ``x`` (numpy's, or polygrad's for a Variable)."""
    return marray.masked_namespace(xpc.array_namespace(x))


X = normal(6)
P = positive(6, seed=1)
M = np.array([False, True, False, False, True, False])
A = normal(3, 4, seed=2)
B = normal(4, 2, seed=3)
MA = np.zeros((3, 4), dtype=bool)
MA[1, 2] = MA[0, 0] = True

CASES: list[Case] = []


def case(name, fn, *args, **kw):
    CASES.append(Case("marray." + name, fn, args, **kw))


def on(op):
    """A case function: ``op(mxp, a)`` on the masked array of (x, mask)."""

    def fn(x, m):
        mxp = masked(x)
        return op(mxp, mxp.asarray(x, mask=m))

    return fn


# elementwise
for _name in ("exp", "sin", "tanh", "abs", "square", "expm1", "negative"):
    case(f"{_name}", on(lambda mxp, a, _n=_name: getattr(mxp, _n)(a)), X, M)
for _name in ("log", "sqrt", "log1p", "log2"):
    case(f"{_name}", on(lambda mxp, a, _n=_name: getattr(mxp, _n)(a)), P, M)
case("a * a + 1", on(lambda mxp, a: a * a + 1.0), X, M)
case("a / b", lambda x, y, m: (lambda mxp: mxp.asarray(x, mask=m) / mxp.asarray(y, mask=m[::-1]))(masked(x)), X, P,
     M)
case("a ** 3", on(lambda mxp, a: a ** 3), X, M)
case("clip", on(lambda mxp, a: mxp.clip(a, -0.5, 0.5)), X, M)
case("where", on(lambda mxp, a: mxp.where(a > 0, a, a * 2.0)), X, M)
# reductions skip the masked elements
for _name in ("sum", "mean", "prod", "max", "min", "var", "std"):
    case(f"{_name}", on(lambda mxp, a, _n=_name: getattr(mxp, _n)(a)), X, M)
case("sum(axis=0)", on(lambda mxp, a: mxp.sum(a, axis=0)), A, MA)
case("mean(axis=1)", on(lambda mxp, a: mxp.mean(a, axis=1)), A, MA)
case("var(correction=1)", on(lambda mxp, a: mxp.var(a, correction=1)), X, M)
case("cumulative_sum", on(lambda mxp, a: mxp.cumulative_sum(a)), X, M)
case("argmax", on(lambda mxp, a: mxp.argmax(a)), X, M, expect="value")
case("a > 0", on(lambda mxp, a: a > 0), X, M, expect="value")
# indexing, assignment, manipulation
case("a[1:4]", on(lambda mxp, a: a[1:4]), X, M)
case("a[::2] * 2", on(lambda mxp, a: a[::2] * 2.0), X, M)
case("reshape", on(lambda mxp, a: mxp.reshape(a, (2, 3))), X, M)
case("permute_dims", on(lambda mxp, a: mxp.permute_dims(a, (1, 0))), A, MA)
case("concat", on(lambda mxp, a: mxp.concat([a, a * 2.0])), X, M)
case("stack", on(lambda mxp, a: mxp.stack([a, a + 1.0])), X, M)
case("flip", on(lambda mxp, a: mxp.flip(a)), X, M)
case("sort", on(lambda mxp, a: mxp.sort(a)), X, M)
case("matmul", lambda a, b, m: (lambda mxp: mxp.matmul(mxp.asarray(a, mask=m), mxp.asarray(b)))(masked(a)), A, B, MA)


def _assign(x, m):
    mxp = masked(x)
    a = mxp.asarray(x * 1.0, mask=m)
    a[2] = 7.0
    return a * 3.0


case("setitem", _assign, X, M)

# scipy on masked arrays over Variables (scipy knows marray's namespace)
stats = Lazy("scipy.stats")
special = Lazy("scipy.special")
case("scipy.stats.skew(masked)", on(lambda mxp, a: stats.skew(a)), X, M)
case("scipy.stats.moment(masked, 3)", on(lambda mxp, a: stats.moment(a, 3)), X, M)
case("scipy.stats.gmean(masked)", on(lambda mxp, a: stats.gmean(a)), P, M)
case("scipy.special.erf(masked)", on(lambda mxp, a: special.erf(a)), X, M, expect="refused")  # np.asarray inside
