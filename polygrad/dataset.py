"""Batching examples into arrays (Chainer's ``chainer.dataset``): ``concat_examples``
and ``to_device``, over any backend.

>>> import polygrad as pg
>>> batch = [([0.0, 1.0], 1), ([1.0, 0.0], 0)]          # two examples (x, t)
>>> x, t = pg.dataset.concat_examples(batch)
>>> x.shape, t.shape, x.dtype, t.dtype
((2, 2), (2,), dtype('float64'), dtype('int64'))
"""

from __future__ import annotations

from typing import Any

from polygrad.core.dispatch import backend_of_type, is_array
from polygrad.core.variable import Variable

__all__ = ["concat_examples", "to_device"]


def _backend_name(device: Any, backend: Any) -> str | None:
    """The target backend of ``device=`` / ``backend=`` (a backend name; Chainer's ``"@numpy"`` form too)."""
    if device is not None and backend is not None and device != backend:
        raise ValueError(f"polygrad.dataset: give device= or backend=, not both ({device!r} and {backend!r})")
    target = backend if backend is not None else device
    if target is None:
        return None
    if not isinstance(target, str):
        raise TypeError(
            f"polygrad.dataset: device must be a backend name such as 'numpy' or 'dask' (see pg.backends()), "
            f"got {target!r}; Chainer's GPU ids have no meaning here"
        )
    return target[1:] if target.startswith("@") else target


def to_device(device: Any, x: Any) -> Any:
    """``x`` (an array, or None) moved to backend ``device`` (a backend name; None leaves it where it is)."""
    name = _backend_name(device, None)
    if name is None or x is None:
        return x
    from polygrad.backends import to_backend

    return to_backend(x._data if isinstance(x, Variable) else x, name)


def concat_examples(batch: Any, device: Any = None, padding: Any = None, *, backend: Any = None) -> Any:
    """Stack a list of examples into arrays, field by field (Chainer's ``concat_examples``).

    Examples that are tuples give a tuple of arrays (one per field), examples
    that are dicts a dict, and plain examples one array; each array has the
    batch as its new first axis. Fields that are arrays are stacked with their
    own backend's namespace; Python numbers and lists become arrays of the
    target backend, else of the backend of the example's arrays, else of the
    current backend (integers take its default integer dtype, as numpy's
    ``asarray`` would).

    :param device: the backend to put the arrays on (a name such as
        ``"numpy"`` or ``"dask"``; Chainer's ``"@numpy"`` is read as
        ``"numpy"``); None leaves them on the backend of the examples (Python
        values go to the current backend). ``backend=`` is the same.
    :param padding: None (every example of a field has one shape), or a value
        that pads each example up to the largest shape of its field (a tuple
        or dict of values gives one per field, as the examples).
    """
    if len(batch) == 0:
        raise ValueError("polygrad.dataset.concat_examples: the batch is empty")
    target = _backend_name(device, backend)
    first = batch[0]
    fields = first.values() if isinstance(first, dict) else first if isinstance(first, tuple) else (first,)
    home = target or next((backend_of_type(type(_raw(v))).name for v in fields if is_array(_raw(v))), None)
    if isinstance(first, tuple):
        pads = padding if isinstance(padding, tuple) else (padding,) * len(first)
        if len(pads) != len(first):
            raise ValueError(f"polygrad.dataset.concat_examples: {len(pads)} paddings for examples of {len(first)} fields")
        return tuple(_stack([example[i] for example in batch], pads[i], target, home, f"field {i}")
                     for i in range(len(first)))
    if isinstance(first, dict):
        pads = padding if isinstance(padding, dict) else {key: padding for key in first}
        return {key: _stack([example[key] for example in batch], pads.get(key), target, home, f"field {key!r}")
                for key in first}
    return _stack(list(batch), padding, target, home, "the examples")


def _raw(v: Any) -> Any:
    return v._data if isinstance(v, Variable) else v


def _stack(values: list, padding: Any, target: str | None, home: str | None, what: str) -> Any:
    """The examples of one field stacked; Python values go to ``home`` (the target, else the
    backend of the batch's arrays, else the current one)."""
    from polygrad.backends import get_backend, to_backend

    values = [_raw(v) for v in values]
    if not is_array(values[0]):  # Python numbers or lists: one array
        return get_backend(home).xp.asarray(values)
    backend = backend_of_type(type(values[0]))
    xp = backend.xp
    for k, v in enumerate(values):
        if not is_array(v) or backend_of_type(type(v)) is not backend:
            raise TypeError(
                f"polygrad.dataset.concat_examples: in {what}, example {k} is a {type(v).__name__}, "
                f"example 0 an array of backend {backend.name!r}"
            )
    if padding is not None:
        values = _pad(xp, values, padding, what)
    else:
        shapes = {tuple(v.shape) for v in values}
        if len(shapes) > 1:
            raise ValueError(
                f"polygrad.dataset.concat_examples: in {what}, the examples have shapes {sorted(shapes)}; "
                "pass padding= to pad them to the largest"
            )
    out = xp.stack(values, axis=0)
    return out if target is None or target == backend.name else to_backend(out, target)


def _pad(xp: Any, values: list, padding: Any, what: str) -> list:
    """Each array padded at its end with ``padding`` up to the largest shape among them (concatenations only,
    so it works on backends without in-place writes)."""
    ndims = {v.ndim for v in values}
    if len(ndims) > 1:
        raise ValueError(f"polygrad.dataset.concat_examples: in {what}, the examples have different ranks {sorted(ndims)}")
    full = tuple(max(v.shape[k] for v in values) for k in range(values[0].ndim))
    out = []
    for v in values:
        for k in range(v.ndim):
            short = full[k] - v.shape[k]
            if short:
                block = tuple(v.shape[:k]) + (short,) + tuple(v.shape[k + 1:])
                v = xp.concat([v, xp.full(block, padding, dtype=v.dtype)], axis=k)
        out.append(v)
    return out
