"""Save and load Links and optimizers as ``.npz`` files (Chainer's serializers).

>>> import polygrad.links as L
>>> from polygrad import serializers
>>> model = L.Linear(3, 2)
>>> serializers.save_npz("model.npz", model)            # doctest: +SKIP
>>> serializers.load_npz("model.npz", model)            # doctest: +SKIP

Keys are the paths of the parameters without the leading slash (``"l1/W"``
in a Chain with a child ``l1``); an optimizer saves ``t``, ``epoch`` and each
parameter's state (``"l1/W/m"``). Arrays are written from any backend and
loaded onto the backend (and dtype) of the parameter or state they replace,
so a model saved from one backend loads onto another. A parameter not yet
initialized takes the saved array, on the current backend.

The ``.npz`` format needs numpy: the numpy plugin reads and writes the files
(hooks ``polygrad_save_npz`` / ``polygrad_load_npz``); polygrad imports no array
library itself.

Objects take part through Chainer's protocol: ``obj.serialize(serializer)``,
where ``serializer[name]`` is the serializer of a child and
``value = serializer(key, value)`` saves ``value`` (returning it) or returns
the loaded one. Links without a ``serialize`` method are serialized through
``namedparams()`` and the persistent values their links name in
``_persistent`` (Chainer's ``add_persistent``).
"""

from __future__ import annotations

from typing import Any

from polygrad.core.dispatch import backend_of_type

__all__ = ["save_npz", "load_npz", "DictionarySerializer", "NpzDeserializer"]

_SCALARS = (bool, int, float, complex)


class DictionarySerializer:
    """Collects ``key -> value`` into ``target`` (a dict), keys prefixed by ``path``."""

    loading = False

    def __init__(self, target: dict | None = None, path: str = "") -> None:
        self.target = {} if target is None else target
        self.path = path

    def __getitem__(self, key: str) -> "DictionarySerializer":
        return DictionarySerializer(self.target, self.path + key.strip("/") + "/")

    def __call__(self, key: str, value: Any) -> Any:
        if value is not None:  # an uninitialized parameter is not saved
            self.target[self.path + key.lstrip("/")] = value
        return value


class NpzDeserializer:
    """Reads values from an open ``.npz`` archive (``numpy.load``'s result).

    ``serializer(key, value)`` returns the stored array converted to the
    backend and dtype of ``value`` (checking the shape), a Python scalar of
    ``value``'s type, or, for ``value=None``, the stored numpy array. A key
    missing from the file raises KeyError, or returns ``value`` unchanged
    when ``strict=False``.
    """

    loading = True

    def __init__(self, npz: Any, path: str = "", strict: bool = True, file: Any = None) -> None:
        self.npz = npz
        self.path = path
        self.strict = strict
        self.file = file

    def __getitem__(self, key: str) -> "NpzDeserializer":
        return NpzDeserializer(self.npz, self.path + key.strip("/") + "/", self.strict, self.file)

    def __call__(self, key: str, value: Any) -> Any:
        full = self.path + key.lstrip("/")
        if full not in self.npz.files:
            if not self.strict:
                return value
            where = f" {self.file!r}" if isinstance(self.file, str) else ""
            raise KeyError(
                f"polygrad.load_npz: {full!r} is not in the file{where} (it holds {len(self.npz.files)} keys); "
                f"pass strict=False to leave what is missing unchanged"
            )
        data = self.npz[full]
        if value is None:
            return data
        if isinstance(value, _SCALARS):
            if data.shape != ():
                raise ValueError(f"polygrad.load_npz: {full!r} holds an array of shape {data.shape}, expected a scalar")
            return type(value)(data.item())
        shape = tuple(value.shape)
        if tuple(data.shape) != shape:
            raise ValueError(
                f"polygrad.load_npz: shape mismatch for {full!r}: the file has shape {tuple(data.shape)}, "
                f"the target has shape {shape}"
            )
        backend = backend_of_type(type(value))
        out = _from_numpy(data, backend)
        if out.dtype != value.dtype:
            out = backend.xp.astype(out, value.dtype)
        return out


# ---------------------------------------------------------------------------
# Links
# ---------------------------------------------------------------------------


def serialize(obj: Any, serializer: Any) -> None:
    """Run ``obj.serialize(serializer)``; a Link without one goes through
    ``namedparams()`` and its links' persistent values.

    A persistent value is an attribute named in a link's ``_persistent``
    (Chainer's ``add_persistent`` registry: running statistics and the like),
    saved under the link's path (``"bn/avg_mean"``). Loading a Link is
    all-or-nothing: every array is read and checked before anything changes.
    """
    method = getattr(obj, "serialize", None)
    if callable(method):
        method(serializer)
        return
    if not callable(getattr(obj, "namedparams", None)):
        raise TypeError(
            f"polygrad: cannot serialize a {type(obj).__name__}: it has neither serialize(serializer) nor namedparams()"
        )
    loaded = []
    for path, param in obj.namedparams(include_uninit=True):
        data = serializer(path.lstrip("/"), param.data)
        if serializer.loading and data is not None and data is not param.data:
            loaded.append((param, "data", data))
    stack = [(obj, serializer)]
    while stack:
        link, s = stack.pop()
        for name in sorted(getattr(link, "_persistent", ())):
            value = getattr(link, name)
            data = s(name, value)
            if s.loading and data is not value:
                loaded.append((link, name, data))
        for name in reversed(list(getattr(link, "_children", ()))):
            stack.append((getattr(link, name), s[name]))
    for holder, attr, data in loaded:
        if getattr(holder, attr) is None and not isinstance(data, _SCALARS):
            from polygrad.backends import get_backend

            data = _from_numpy(data, get_backend())
        if attr == "data":
            holder.data = data
        else:
            setattr(holder, attr, data)


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------


def _npz_backend() -> Any:
    """The backend that reads and writes ``.npz`` files (the numpy plugin's
    ``polygrad_save_npz`` / ``polygrad_load_npz`` hooks): polygrad itself imports no array library."""
    from polygrad.backends import backends, get_backend

    for name in ("numpy",) + tuple(n for n in backends() if n != "numpy"):
        try:
            b = get_backend(name)
        except ValueError:
            continue
        if b.check_usable()[0] and b.can_do_npz():
            return b
    raise RuntimeError("polygrad: saving and loading .npz files needs the numpy backend (pip install polygrad-numpy)")


def save_npz(file: Any, obj: Any, compression: bool = True) -> None:
    """Save ``obj`` (a Link or an optimizer) to ``file`` (a path or a binary file object)."""
    from polygrad.backends import compute

    target: dict[str, Any] = {}
    serialize(obj, DictionarySerializer(target))
    keys = list(target)
    values = compute(*target.values())  # lazy arrays: one pass per backend
    npz = _npz_backend()
    arrays = {k: _to_npz_backend(v, npz) for k, v in zip(keys, values)}
    npz.save_npz(file, arrays, compression)


def load_npz(file: Any, obj: Any, path: str = "", strict: bool = True) -> None:
    """Load ``obj`` (a Link or an optimizer) from ``file``, written by :func:`save_npz`.

    :param path: a prefix of the keys to read (``"model/"`` reads ``model/l1/W``
        into ``l1/W``).
    :param strict: if False, keys missing from the file leave their values unchanged.
    """
    with _npz_backend().load_npz(file) as npz:
        serialize(obj, NpzDeserializer(npz, path=path, strict=strict, file=file))


# ---------------------------------------------------------------------------
# Moving arrays to and from the file's backend
# ---------------------------------------------------------------------------


def _to_npz_backend(x: Any, npz: Any) -> Any:
    from polygrad.backends import to_backend

    if isinstance(x, _SCALARS):
        return npz.xp.asarray(x)
    return to_backend(x, npz.name)


def _from_numpy(a: Any, backend: Any) -> Any:
    """``a`` (an array read from the file) as an array of ``backend``."""
    from polygrad.backends import to_backend

    try:
        return to_backend(a, backend.name)
    except (ValueError, RuntimeError, TypeError):  # the protocols, as a last resort
        xp = backend.xp
        try:
            return xp.from_dlpack(a)
        except Exception:
            return xp.asarray(a)
