"""The fft extension: transforms, shifts and sample frequencies (``xp.fft.<name>``).

Rows are named ``fft_<name>`` in the op table; rules reach them as ``o.fft_<name>``.

Every transform is linear, so its vjp is its adjoint: the inverse transform with the
dual normalisation (``"backward"`` <-> ``"forward"``, ``"ortho"`` stays), cropped or
zero-padded back to the input's length where ``n`` / ``s`` padded or cropped it.
Complex gradients follow PyTorch's convention: for a real loss L, the gradient
with respect to z = a + ib is dL/da + i dL/db (the conjugate Wirtinger
derivative, times 2), so the vjp of a complex-linear map is its conjugate
transpose and a real input receives the real part of that. The half-spectrum
transforms are real-linear; their adjoints are the partner transform with weights
on the half spectrum (1 at 0 and at n/2 for even n, 2 or 1/2 elsewhere):

    rfft  <->  irfft(w * g),  irfft  <->  c * rfft(g),
    hfft  <->  c * ihfft(g),  ihfft  <->  hfft(w * g),    w = 1/2, c = 2 off the ends.

The standard takes complex input to fft, ifft, fftn, ifftn, irfft, irfftn and hfft;
numpy also takes real input, whose gradient is then the real part (the element-wise
row ``real``).
"""

from __future__ import annotations

from typing import Any

from polygrad.core.dispatch import backend_of_type
from polygrad.core.op import Op, def_nograd, defvjp
from polygrad.core.primitive import apply
from polygrad.core.variable import Variable
from polygrad.ops._export import names, public, row_function
from polygrad.ops.creation import count


_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


# ---------------------------------------------------------------------------
# Helpers for rules
# ---------------------------------------------------------------------------
def _xp(a: Any) -> Any:
    return backend_of_type(type(a._data if isinstance(a, Variable) else a)).xp


def _fit(o: Any, y: Any, axis: int, length: int) -> Any:
    """Crop or zero-pad ``y`` along ``axis`` to ``length`` (the adjoint of the transform's own resizing)."""
    have = y.shape[axis]
    if have == length:
        return y
    key = (slice(None),) * axis + (slice(0, min(have, length)), ...)
    if have > length:
        return y[key]
    return o.getitem_grad(y, key, tuple(y.shape[:axis]) + (length,) + tuple(y.shape[axis + 1:]))


def _weights(g: Any, n: int, axis: int, value: float, complex_g: bool) -> Any:
    """Weights on the half spectrum of a length-``n`` signal: 1 at 0 (and n/2 for even n), ``value``
    elsewhere, shaped to broadcast along ``axis`` of ``g`` (in g's real precision)."""
    xp = _xp(g)
    w = [1.0] + [value] * (n // 2) if n % 2 else [1.0] + [value] * (n // 2 - 1) + [1.0]
    dtype = g.dtype
    if complex_g:
        dtype = xp.finfo(dtype).dtype  # the real dtype of g's precision
    shape = [1] * g.ndim
    shape[axis] = len(w)
    return xp.reshape(xp.asarray(w, dtype=dtype), tuple(shape))


def _to_input(o: Any, gx: Any, x: Any) -> Any:
    """``gx`` for input ``x``: its real part where ``x`` is real (the standard asks for complex input)."""
    xp = _xp(gx)
    if xp.isdtype(x.dtype, "complex floating") or not xp.isdtype(gx.dtype, "complex floating"):
        return gx
    return o.real(gx)


def _axes(ndim: int, s: Any, axes: Any, op: str, same_lengths_ok: bool = False) -> list:
    """The transformed axes of an n-dimensional transform (non-negative), for ``op``'s rule: a
    repeated axis (numpy transforms along it twice, with a length each time) is refused, as
    JAX's transforms refuse it, unless ``same_lengths_ok`` (the complex transforms) and every
    pass along the axis has one length: the adjoint then repeats too. (The rules crop or pad
    each axis once: with lengths that change, the gradient came out wrong by as much as its
    own size.)"""
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    out = [a % ndim for a in axes]
    kept = same_lengths_ok and (s is None or all(len({n for n, b in zip(s, out) if b == a}) == 1 for a in out))
    if len(set(out)) != len(out) and not kept:
        raise NotImplementedError(
            f"polygrad: the gradient of {op} along a repeated axis (axes={tuple(axes)}) is not implemented; "
            f"transform along the axis once per call (e.g. fft(fft(x, axis=0), axis=0))")
    return out


# ---------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------
def _c2c_vjp(adjoint: str):
    """fft <-> ifft: the adjoint is the other one with the dual norm."""

    def rule(o: Any, g: Any, ans: Any, x: Any, n: Any = None, axis: int = -1, norm: str = "backward") -> Any:
        ax = axis % x.ndim
        gx = getattr(o, adjoint)(g, axis=ax, norm=_DUAL[norm])
        return _to_input(o, _fit(o, gx, ax, x.shape[ax]), x)

    return rule


def _c2cn_vjp(adjoint: str, name: str):
    def rule(o: Any, g: Any, ans: Any, x: Any, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
        axes_ = _axes(x.ndim, s, axes, name, same_lengths_ok=True)
        gx = getattr(o, adjoint)(g, axes=tuple(axes_), norm=_DUAL[norm])
        for a in axes_:
            gx = _fit(o, gx, a, x.shape[a])
        return _to_input(o, gx, x)

    return rule


def _rfft_vjp(o: Any, g: Any, ans: Any, x: Any, n: Any = None, axis: int = -1, norm: str = "backward") -> Any:
    ax = axis % x.ndim
    length = x.shape[ax] if n is None else n
    gx = o.fft_irfft(g * _weights(g, length, ax, 0.5, True), n=length, axis=ax, norm=_DUAL[norm])
    return _fit(o, gx, ax, x.shape[ax])


def _irfft_vjp(o: Any, g: Any, ans: Any, x: Any, n: Any = None, axis: int = -1, norm: str = "backward") -> Any:
    ax = axis % x.ndim
    gx = o.fft_rfft(g, axis=ax, norm=_DUAL[norm]) * _weights(g, g.shape[ax], ax, 2.0, False)
    return _to_input(o, _fit(o, gx, ax, x.shape[ax]), x)


def _hfft_vjp(o: Any, g: Any, ans: Any, x: Any, n: Any = None, axis: int = -1, norm: str = "backward") -> Any:
    ax = axis % x.ndim
    gx = o.fft_ihfft(g, axis=ax, norm=_DUAL[norm]) * _weights(g, g.shape[ax], ax, 2.0, False)
    return _to_input(o, _fit(o, gx, ax, x.shape[ax]), x)


def _ihfft_vjp(o: Any, g: Any, ans: Any, x: Any, n: Any = None, axis: int = -1, norm: str = "backward") -> Any:
    ax = axis % x.ndim
    length = x.shape[ax] if n is None else n
    gx = o.fft_hfft(g * _weights(g, length, ax, 0.5, True), n=length, axis=ax, norm=_DUAL[norm])
    return _fit(o, gx, ax, x.shape[ax])


def _rfftn_vjp(o: Any, g: Any, ans: Any, x: Any, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    axes_ = _axes(x.ndim, s, axes, "fft_rfftn")
    last = axes_[-1]
    sizes = tuple(g.shape[a] for a in axes_[:-1]) + (x.shape[last] if s is None else s[-1],)
    w = _weights(g, sizes[-1], last, 0.5, True)
    gx = o.fft_irfftn(g * w, s=sizes, axes=tuple(axes_), norm=_DUAL[norm])
    for a in axes_:
        gx = _fit(o, gx, a, x.shape[a])
    return gx


def _irfftn_vjp(o: Any, g: Any, ans: Any, x: Any, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    axes_ = _axes(x.ndim, s, axes, "fft_irfftn")
    last = axes_[-1]
    gx = o.fft_rfftn(g, axes=tuple(axes_), norm=_DUAL[norm]) * _weights(g, g.shape[last], last, 2.0, False)
    for a in axes_:
        gx = _fit(o, gx, a, x.shape[a])
    return _to_input(o, gx, x)


# ---------------------------------------------------------------------------
# The rows, each with its function
# ---------------------------------------------------------------------------
def _along_one_axis(op: Op) -> Any:
    """The standard's ``name(x, /, *, n=None, axis=-1, norm='backward')`` for row ``op``."""

    def fn(x, /, *, n=None, axis=-1, norm="backward"):
        return apply(op, (x,), {"n": n, "axis": axis, "norm": norm})

    return row_function(fn, op, __name__, ext="fft")


def _along_axes(op: Op) -> Any:
    """The standard's ``name(x, /, *, s=None, axes=None, norm='backward')`` for row ``op``."""

    def fn(x, /, *, s=None, axes=None, norm="backward"):
        return apply(op, (x,), {"s": s, "axes": axes, "norm": norm})

    return row_function(fn, op, __name__, ext="fft")


def _n_dim(name: str) -> Any:
    """The kernel of ``fft.<name>``, an n-dimensional transform: with ``s`` and no ``axes`` the
    standard transforms the last ``len(s)`` axes, which it names for the backend (dask's took the
    leading ones, and the rule, which takes the last, gave the gradient of another transform)."""

    def kernel(xp: Any, x: Any, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
        if s is not None and axes is None:
            axes = tuple(range(-len(s), 0))
        return getattr(xp.fft, name)(x, s=s, axes=axes, norm=norm)

    return kernel


FFT = defvjp(Op("fft_fft", shapes=True), _c2c_vjp("fft_ifft"))
fft = _along_one_axis(FFT)
IFFT = defvjp(Op("fft_ifft", shapes=True), _c2c_vjp("fft_fft"))
ifft = _along_one_axis(IFFT)
FFTN = defvjp(Op("fft_fftn", _n_dim("fftn"), shapes=True), _c2cn_vjp("fft_ifftn", "fft_fftn"))
fftn = _along_axes(FFTN)
IFFTN = defvjp(Op("fft_ifftn", _n_dim("ifftn"), shapes=True), _c2cn_vjp("fft_fftn", "fft_ifftn"))
ifftn = _along_axes(IFFTN)
RFFT = defvjp(Op("fft_rfft", shapes=True), _rfft_vjp)
rfft = _along_one_axis(RFFT)
IRFFT = defvjp(Op("fft_irfft", shapes=True), _irfft_vjp)
irfft = _along_one_axis(IRFFT)
RFFTN = defvjp(Op("fft_rfftn", _n_dim("rfftn"), shapes=True), _rfftn_vjp)
rfftn = _along_axes(RFFTN)
IRFFTN = defvjp(Op("fft_irfftn", _n_dim("irfftn"), shapes=True), _irfftn_vjp)
irfftn = _along_axes(IRFFTN)
HFFT = defvjp(Op("fft_hfft", shapes=True), _hfft_vjp)
hfft = _along_one_axis(HFFT)
IHFFT = defvjp(Op("fft_ihfft", shapes=True), _ihfft_vjp)
ihfft = _along_one_axis(IHFFT)
FFTSHIFT = defvjp(Op("fft_fftshift"),
                  lambda o, g, ans, x, axes=None: o.fft_ifftshift(g, axes=axes))


@public(ext="fft")
def fftshift(x, /, *, axes=None):
    return apply(FFTSHIFT, (x,), {"axes": axes})


IFFTSHIFT = defvjp(Op("fft_ifftshift"),
                   lambda o, g, ans, x, axes=None: o.fft_fftshift(g, axes=axes))


@public(ext="fft")
def ifftshift(x, /, *, axes=None):
    return apply(IFFTSHIFT, (x,), {"axes": axes})


# The sample frequencies take no array; their n is positional-only (so the kernel passes it by position).
FFTFREQ = def_nograd(Op("fft_fftfreq", lambda xp, n, d=1.0, dtype=None, device=None:
                        xp.fft.fftfreq(n, d=d, dtype=dtype, device=device)))


@public(ext="fft", creates=True)
def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    n = count(n, "n", "fft.fftfreq", least=1)
    return apply(FFTFREQ, (), {"n": n, "d": d, "dtype": dtype, "device": device})


RFFTFREQ = def_nograd(Op("fft_rfftfreq", lambda xp, n, d=1.0, dtype=None, device=None:
                         xp.fft.rfftfreq(n, d=d, dtype=dtype, device=device)))


@public(ext="fft", creates=True)
def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    n = count(n, "n", "fft.rfftfreq", least=1)
    return apply(RFFTFREQ, (), {"n": n, "d": d, "dtype": dtype, "device": device})


__all__ = names(__name__, "fft")  # the extension's functions, declared above
