"""The op table and what is derived from it: every row lives under polygrad/ops, next
to its public function; the lists of names (each chapter's ``__all__``, the standard's
names the namespaces offer, ``GRAPH_OPS``) come from one registration per function;
rows without a kernel run the namespace's function of their name."""

from __future__ import annotations

import dis
import importlib
import pkgutil

import numpy as np
import pytest

import polygrad as pg
import polygrad.array_api as A
from polygrad import ops
from polygrad.core.op import GRAPH_OPS, REGISTRY, NamespaceKernel, Op
from polygrad.ops._export import EXPORTS

# The Array API standard's names, written out once, for testing only: the library derives its
# own lists from the op table, and these tests compare the two. Those of 2024.12, the version
# polygrad claims, and isin and broadcast_shapes of 2025.12 (not its linalg.eig / eigvals).
STANDARD_FUNCTIONS = (
    # element-wise
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and", "bitwise_invert",
    "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj", "copysign",
    "cos", "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater", "greater_equal", "hypot",
    "imag", "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log10", "log1p", "log2", "logaddexp",
    "logical_and", "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
    "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round", "sign", "signbit", "sin",
    "sinh", "sqrt", "square", "subtract", "tan", "tanh", "trunc",
    # creation
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace", "meshgrid",
    "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
    # data types
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    # manipulation
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
    "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack",
    # searching, sets, sorting
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where", "isin", "unique_all", "unique_counts",
    "unique_inverse", "unique_values", "argsort", "sort",
    # statistical and utility
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var", "all", "any", "diff",
    # indexing and linear algebra
    "take", "take_along_axis", "matmul", "matrix_transpose", "tensordot", "vecdot",
)
STANDARD_LINALG = (
    "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm", "matrix_power",
    "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
    "trace", "vecdot", "vector_norm",
)
STANDARD_FFT = (
    "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq",
    "fftshift", "ifftshift",
)


def _polygrad_modules():
    import polygrad

    for info in pkgutil.walk_packages(polygrad.__path__, "polygrad."):
        yield importlib.import_module(info.name)


# ---------------------------------------------------------------------------
# The standard's names, derived from the table
# ---------------------------------------------------------------------------
def test_derived_lists_are_the_standard():
    """FUNCTIONS, LINALG and FFT, derived from the registrations, are exactly the standard's names."""
    assert sorted(A.FUNCTIONS) == sorted(STANDARD_FUNCTIONS)
    assert sorted(A.LINALG) == sorted(STANDARD_LINALG)
    assert sorted(A.FFT) == sorted(STANDARD_FFT)


@pytest.mark.parametrize("name", STANDARD_FUNCTIONS)
def test_every_standard_function_is_in_the_namespace_and_pg(xp, name):
    """Each function of the standard is reached on x.__array_namespace__() and on pg."""
    ns = pg.Variable(xp.ones(2, dtype=xp.float64)).__array_namespace__()
    assert callable(getattr(ns, name))
    assert callable(getattr(pg, name))


STANDARD_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
                   "float64", "complex64", "complex128")
STANDARD_CONSTANTS = ("e", "inf", "nan", "newaxis", "pi")


def test_top_level_polygrad_is_a_namespace():
    """pg itself is an Array API namespace: version, inspection API, dtypes, constants, every function."""
    assert pg.__array_api_version__ == "2024.12"
    info = pg.__array_namespace_info__()
    assert {"capabilities", "default_device", "default_dtypes", "devices", "dtypes"} <= set(dir(info))
    assert set(info.dtypes()) == set(STANDARD_DTYPES)
    for name in STANDARD_DTYPES + STANDARD_CONSTANTS:
        getattr(pg, name)
    missing = [n for n in STANDARD_FUNCTIONS if not callable(getattr(pg, n, None))]
    missing += [f"linalg.{n}" for n in STANDARD_LINALG if not callable(getattr(pg.linalg, n, None))]
    missing += [f"fft.{n}" for n in STANDARD_FFT if not callable(getattr(pg.fft, n, None))]
    assert missing == []


@pytest.mark.parametrize("ext, names", [("linalg", STANDARD_LINALG), ("fft", STANDARD_FFT)])
def test_every_extension_function_is_in_the_namespace_and_pg(xp, ext, names):
    """Each function of the linalg and fft extensions is reached as ns.<ext>.<name> and pg.<ext>.<name>."""
    ns = pg.Variable(xp.ones(2, dtype=xp.float64)).__array_namespace__()
    for name in names:
        assert callable(getattr(getattr(ns, ext), name)), name
        assert callable(getattr(getattr(pg, ext), name)), name


def test_each_function_is_registered_once():
    """No function is registered twice under one name and namespace."""
    keys = [(e.ext, e.name) for e in EXPORTS]
    assert len(keys) == len(set(keys))


def test_chapter_all_is_what_the_chapter_registers():
    """A chapter's __all__ lists the functions it registers at the top level, and each is its own attribute."""
    for chapter in ops.CHAPTERS:
        registered = [e.name for e in EXPORTS if e.module == chapter.__name__ and e.ext is None]
        assert list(chapter.__all__) == registered
        for name in chapter.__all__:
            assert getattr(ops, name) is getattr(chapter, name)


def test_graph_ops_holds_every_registered_function():
    """Rules under create_graph reach every public function: o.<name>, o.linalg_<name>, o.fft_<name>."""
    for e in EXPORTS:
        key = e.name if e.ext is None else f"{e.ext}_{e.name}"
        assert getattr(GRAPH_OPS, key) is e.fn


# ---------------------------------------------------------------------------
# Rows and their functions
# ---------------------------------------------------------------------------
def test_every_row_lives_under_polygrad_ops():
    """No module of polygrad outside polygrad.ops defines an Op row (functions/ holds compositions only)."""
    outside = {}
    for module in _polygrad_modules():
        if module.__name__.startswith(("polygrad.ops", "polygrad.core")):
            continue
        for attr, value in vars(module).items():
            if isinstance(value, Op):
                outside[f"{module.__name__}.{attr}"] = value.name
    assert outside == {}


def test_every_row_is_a_module_constant_of_polygrad_ops():
    """Each row of the library is bound to a name in a module of polygrad.ops (where its function sits next to it)."""
    bound = {id(v) for m in _polygrad_modules() if m.__name__.startswith("polygrad.ops") for v in vars(m).values()}
    assert [op.name for op in REGISTRY.values() if id(op) not in bound] == []


def test_public_function_sits_in_the_module_of_its_row():
    """pg.sin is polygrad.ops.elementwise.sin, declared with (and carrying) the row SIN."""
    from polygrad.ops import elementwise

    assert pg.sin is elementwise.sin
    assert pg.sin.__module__ == "polygrad.ops.elementwise"
    assert pg.sin.op is elementwise.SIN is REGISTRY["sin"]


@pytest.mark.parametrize("e", [e for e in EXPORTS if hasattr(e.fn, "op")], ids=lambda e: e.name)
def test_generated_functions_are_one_direct_apply(e):
    """A function made by unary/binary/row_function makes one call, apply(ROW, ...): nothing in between."""
    calls = [i for i in dis.get_instructions(e.fn) if i.opname.startswith("CALL")]
    assert len(calls) == 1
    assert e.fn.__code__.co_names == ("apply",)


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------
def test_row_without_a_kernel_runs_the_namespace_function():
    """Op("exp") has no kernel of its own: it runs xp.exp (xp.linalg.inv for linalg_inv)."""
    strict = pg.get_backend("strict")
    assert isinstance(REGISTRY["exp"].fwd, NamespaceKernel)
    assert REGISTRY["exp"].kernel(strict) is strict.xp.exp
    assert REGISTRY["linalg_inv"].kernel(strict) is strict.xp.linalg.inv
    assert REGISTRY["fft_rfft"].kernel(strict) is strict.xp.fft.rfft


def test_default_kernel_is_callable_like_any_kernel():
    """op.fwd(xp, *args, **params) works for a row without a kernel of its own (as for the others)."""
    xp = pg.get_backend("numpy").xp
    np.testing.assert_allclose(REGISTRY["sin"].fwd(xp, np.array([0.5])), np.sin([0.5]))
    np.testing.assert_allclose(REGISTRY["linalg_det"].fwd(xp, np.eye(2) * 2), 4.0)


def test_backend_kernels_still_override_the_default():
    """A backend's polygrad_kernels entry wins over the namespace's function (numpy's matmul)."""
    numpy = pg.get_backend("numpy")
    assert REGISTRY["matmul"].kernel(numpy) is numpy.kernels["matmul"]


def test_lambda_kernels_only_where_needed():
    """A row writes a lambda kernel only where it does something else than xp.<name>(*args, **params)."""
    import inspect

    restating = []
    for op in REGISTRY.values():
        if isinstance(op.fwd, NamespaceKernel) or not op.uses_xp:
            continue
        try:
            source = inspect.getsource(op.fwd).strip()
        except (OSError, TypeError):
            continue
        if source.startswith("lambda") or f"Op(\"{op.name}\", lambda" in source:
            restating.append(op.name)
    # Each of these maps a keyword to a parameter the standard makes positional-only, or converts the result.
    assert set(restating) <= {"arange", "eye", "linspace", "asarray", "astype", "tile", "linalg_matrix_power",
                              "fft_fftfreq", "fft_rfftfreq", "unstack", "concat", "stack", "getitem",
                              "reverse_dims", "relu", "sigmoid"}
