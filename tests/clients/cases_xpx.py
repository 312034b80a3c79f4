"""array-api-extra's public functions on Variables.

Every public function of ``array_api_extra`` that takes arrays, including each
method of ``xpx.at`` (set, add, subtract, multiply, divide, power, min, max, get)
on an array a node saved and on one it did not, on a leaf, and with ``copy=True``.
"""

from __future__ import annotations

import numpy as np

from clients.harness import Case, Lazy, normal, positive, uniform

REQUIRES = ("array_api_extra",)

xpx = Lazy("array_api_extra")
xpc = Lazy("array_api_compat")


def xp_of(x):
    return xpc.array_namespace(x)


X = normal(5)
V = normal(2, seed=1)
P = positive(5, seed=2)
M = normal(3, 4, seed=3)
IDX = np.array([0, 3])

CASES: list[Case] = []


def case(name, fn, *args, **kw):
    CASES.append(Case("xpx." + name, fn, args, **kw))


# ---------------------------------------------------------------------------
# xpx.at: on an array no node saved (x * 2 keeps the 2, not x), on one a node saved
# (exp keeps its output), on the leaf itself, and with copy=True
# ---------------------------------------------------------------------------
def _twice(x):
    return x * 2.0


def _exp(x):
    return xp_of(x).exp(x)


for _method, _val in (("set", 1), ("add", 1), ("subtract", 1), ("multiply", 1), ("divide", 2), ("power", None),
                      ("min", 1), ("max", 1)):
    def _call(a, v, p, _m=_method, _val=_val):
        return getattr(xpx.at(a, slice(1, 3)), _m)({1: v, 2: p, None: 2.0}[_val])

    _diff = (0,) if _val is None else (0, _val)
    # min and max save the slice they compare, a view of the array they then write into
    case(f"at().{_method}", lambda x, v, p, _c=_call: _c(_twice(x), v, p) * 3.0, X, V, P[:2].copy(), diff=_diff,
         expect="copy" if _method in ("min", "max") else "grad")
    case(f"at().{_method}(on a saved array)", lambda x, v, p, _c=_call: _c(_exp(x), v, p) * 3.0, X, V, P[:2].copy(),
         diff=_diff, expect="copy")
case("at().set(copy=True, on a saved array)", lambda x, v: xpx.at(_exp(x), slice(1, 3)).set(v, copy=True) * 3.0, X, V)
case("at().set(on the leaf)", lambda x, v: xpx.at(x, slice(1, 3)).set(v), X, V, expect="refused")
case("at().set(on the leaf, copy=True)", lambda x, v: xpx.at(x, slice(1, 3)).set(v, copy=True), X, V)
case("at().add(integer index array)", lambda x, v: xpx.at(_twice(x), IDX).add(v), X, V,
     expect={"numpy": "grad", "strict": "client"}, client="array_api_strict refuses integer index arrays")
case("at().set(boolean mask)", lambda x: xpx.at(_exp(x), x > 0).set(0.0), X, expect="copy")

# ---------------------------------------------------------------------------
# the other functions
# ---------------------------------------------------------------------------
case("apply_where", lambda x: xpx.apply_where(x > 0, x, xp_of(x).log, fill_value=0.0), X)
case("apply_where(two branches)", lambda x: xpx.apply_where(x > 0, x, xp_of(x).log, lambda t: t ** 2), X)
case("atleast_nd", lambda x: xpx.atleast_nd(x, ndim=3), X)
case("cov", lambda m: xpx.cov(m), M)
case("create_diagonal", lambda x: xpx.create_diagonal(x), X)
case("create_diagonal(offset=1)", lambda x: xpx.create_diagonal(x, offset=1), X)
case("expand_dims", lambda x: xpx.expand_dims(x, axis=(0, 2)), X)
case("kron", lambda a, b: xpx.kron(a, b), M[:2, :2].copy(), M[1:, 2:].copy())
case("pad", lambda x: xpx.pad(x, 2), X)
case("pad(value)", lambda x: xpx.pad(x, (1, 2), constant_values=1.5), X)
case("pad(2-d)", lambda m: xpx.pad(m, 1), M)
case("sinc", lambda x: xpx.sinc(x), X)
case("nan_to_num", lambda x: xpx.nan_to_num(x), X)
case("nansum", lambda x: xpx.nansum(x), X)
case("nanmean", lambda x: xpx.nanmean(x), X)
case("nanmax", lambda x: xpx.nanmax(x), X)
case("nanmin", lambda x: xpx.nanmin(x), X)
case("angle", lambda x: xpx.angle(x), X, diff=(), expect="value")
case("deg2rad", lambda x: xpx.deg2rad(x), X)
case("rad2deg", lambda x: xpx.rad2deg(x), X)
case("partition", lambda x: xpx.partition(x, 2), X)
case("isclose", lambda a, b: xpx.isclose(a, b, atol=0.5), X, X[::-1].copy(), expect="value")
case("lazy_apply", lambda x: xpx.lazy_apply(lambda a: a * 2.0, x), X)
case("argpartition", lambda x: xpx.argpartition(x, 2), X, expect="value")
case("isin", lambda a, b: xpx.isin(a, b), X, X[:2].copy(), expect="value")
case("nunique", lambda x: xpx.nunique(x), np.array([1.0, 2.0, 1.0, 3.0]), diff=(), expect="value")
case("setdiff1d", lambda a, b: xpx.setdiff1d(a, b), X, X[:2].copy(), diff=(), expect="value")
case("union1d", lambda a, b: xpx.union1d(a, b), X, X[:2].copy(), diff=(), expect="value")
case("searchsorted", lambda a, v: xpx.searchsorted(a, v), np.sort(X), V, expect="value")
case("one_hot", lambda y: xpx.one_hot(y, 4), np.array([0, 2, 3]), expect="value")
case("default_dtype", lambda x: xpx.default_dtype(xp_of(x)) == xp_of(x).float64, X, diff=(), expect="value")
case("broadcast_shapes", lambda x: xpx.broadcast_shapes(x.shape, (3, 1)), X, diff=(), expect="value")
