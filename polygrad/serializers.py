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
initialized takes the saved array where its link would have created it (the
link's backend and dtype, see ``pg.Link.serialize``).

A value that is None (a lazy parameter before the first call, a persistent
value set later) is saved too, as Chainer saves it: its key is listed in one
member, ``"polygrad:none"``, an array of strings that ``numpy.load`` reads
without pickle. Loading it makes the target's value None again, so that a
model saved before its first call loads into a fresh one of the same
structure, and a loaded model is in the state that was saved.

The ``.npz`` format needs numpy: the numpy plugin reads and writes the files
(hooks ``polygrad_save_npz`` / ``polygrad_load_npz``); polygrad imports no array
library itself.

Objects take part through Chainer's protocol: ``obj.serialize(serializer)``,
where ``serializer[name]`` is the serializer of a child and
``value = serializer(key, value)`` saves ``value`` (returning it) or returns
the loaded one. ``pg.Link.serialize`` saves the parameters and the persistent
values (Chainer's ``add_persistent``); ``pg.Chain.serialize`` then calls each
child's own ``serialize``, so a link that saves more state is saved and loaded
its way wherever it sits in a model.

Loading is all-or-nothing: a first pass reads and checks every value while the
object gets its own values back (so nothing changes); only then does a second
pass hand it the loaded ones. This holds for any ``serialize`` that only
assigns what the serializer returns.

File names are used as given, both ways, as Chainer does: ``save_npz("model",
m)`` writes ``model`` (numpy's ``savez`` would add ``.npz``), and
``load_npz("model", m)`` reads it.
"""

from __future__ import annotations

import os
import secrets
import stat
from typing import Any

from polygrad.core.dispatch import SCALARS as _SCALARS, backend_of_type
from polygrad.core.variable import Variable

__all__ = ["save_npz", "load_npz", "DictionarySerializer", "NpzDeserializer"]


#: The member listing the keys whose value is None (a colon: no attribute path has one).
NONE_KEY = "polygrad:none"

#: What a read of a key the file lacks (``strict=False``) gives: the value the caller passed, in each
#: pass its own (a read cached from the first pass would give back that pass's object).
_MISSING = object()


class DictionarySerializer:
    """Collects ``key -> value`` into ``target`` (a dict), keys prefixed by ``path``."""

    loading = False

    def __init__(self, target: dict | None = None, path: str = "") -> None:
        self.target = {} if target is None else target
        self.path = path

    def __getitem__(self, key: str) -> "DictionarySerializer":
        return DictionarySerializer(self.target, self.path + key.strip("/") + "/")

    def __call__(self, key: str, value: Any) -> Any:
        full = self.path + key.lstrip("/")
        if full == NONE_KEY:
            raise ValueError(f"polygrad.save_npz: the key {NONE_KEY!r} is reserved (it lists the values that are None)")
        self.target[full] = value  # None too: save_npz lists it under NONE_KEY
        return value


class _Reads:
    """What the serializers of one load share: the values read so far, and
    whether this pass only checks (``dry``: every call returns the value it was given)."""

    def __init__(self, path: str) -> None:
        self.cache: dict[str, tuple[Any, Any]] = {}
        self.dry = False
        self.none_keys: frozenset[str] | None = None  # read from the file at the first miss
        self.ahead: dict[int, tuple[Any, Any]] = {}  # id(param) -> (param, the array the load gives it)
        self.path = path  # the load's path= (its keys' prefix), for the errors of keys not found
        self.found = False  # whether any key read was in the file (as an array or as a None)
        self.missing: list[str] = []  # the keys read that were not (strict=False)


class NpzDeserializer:
    """Reads values from an open ``.npz`` archive (``numpy.load``'s result).

    ``serializer(key, value)`` returns the stored array converted to the
    backend and dtype of ``value`` (checking the shape; for a scalar of an
    array library, ``numpy.float32``, a scalar of its type), a Python scalar
    of ``value``'s type, or, for ``value=None``, the stored numpy array; None
    where the file saved None (whatever ``value`` is). A key missing from
    the file raises KeyError, or returns ``value`` unchanged when
    ``strict=False``.
    """

    loading = True

    def __init__(self, npz: Any, path: str = "", strict: bool = True, file: Any = None, _reads: Any = None) -> None:
        self.npz = npz
        self.path = path
        self.strict = strict
        self.file = file
        self._reads = _Reads(path) if _reads is None else _reads

    def __getitem__(self, key: str) -> "NpzDeserializer":
        return NpzDeserializer(self.npz, self.path + key.strip("/") + "/", self.strict, self.file, self._reads)

    def __call__(self, key: str, value: Any) -> Any:
        full = self.path + key.lstrip("/")
        reads = self._reads
        sig = _signature(value)
        hit = reads.cache.get(full)
        if hit is not None and hit[0] == sig:
            out = hit[1]
        else:
            out = self._read(full, value)
            reads.cache[full] = (sig, out)
        return value if reads.dry or out is _MISSING else out

    @property
    def checking(self) -> bool:
        """Whether this is the first pass of a load (see :func:`serialize`), where every read hands
        back the value given: an object that decides a value from the file (an optimizer's array a
        file lacks) keeps its own there, so that the values collected after it are its own."""
        return self._reads.dry

    def stored(self, key: str, value: Any) -> Any:
        """What ``self(key, value)`` reads from the file, in either pass (the first pass of
        :func:`serialize` hands the object its own values back): for an object whose keys depend
        on a value in the file (an optimizer's count). Changes nothing."""
        full = self.path + key.lstrip("/")
        hit = self._reads.cache.get(full)
        out = hit[1] if hit is not None and hit[0] == _signature(value) else self._read(full, value)
        return value if out is _MISSING else out

    def will_initialize(self, key: str, param: Any, adopt: Any) -> None:
        """Note, in the first pass, the array that ``param`` (not initialized yet) takes in the second:
        ``adopt(array read for key)``. An optimizer loaded in the same load, after the link, checks its
        state against it (:meth:`data_after_load`); in the first pass the parameter is still None."""
        reads = self._reads
        if reads.dry:
            data = self.stored(key, None)
            if data is not None:
                reads.ahead[id(param)] = (param, adopt(data))

    def data_after_load(self, param: Any) -> Any:
        """``param.data`` as it will be after this load: in the first pass, for a parameter not
        initialized yet, the array noted by :meth:`will_initialize` (None where none was)."""
        reads = self._reads
        if param.data is not None or not reads.dry:
            return param.data
        hit = reads.ahead.get(id(param))
        return hit[1] if hit is not None and hit[0] is param else None

    def stored_keys(self) -> frozenset[str]:
        """The names the file holds directly under this deserializer's path (``t``, ``m``, ``v``
        of one parameter's optimizer state): for an object that refuses what it would not read."""
        n = len(self.path)
        return frozenset(k[n:] for k in self.npz.files if k.startswith(self.path) and "/" not in k[n:])

    def _file(self) -> str:
        """`` 'model.npz'`` for a file named by a path; empty for a file object."""
        return f" {os.fspath(self.file)!r}" if isinstance(self.file, (str, os.PathLike)) else ""

    def _none_keys(self) -> frozenset[str]:
        """The keys the file saved as None (none for a file without the NONE_KEY member)."""
        reads = self._reads
        if reads.none_keys is None:
            keys: frozenset[str] = frozenset()
            if NONE_KEY in self.npz.files:
                data = self.npz[NONE_KEY]
                if getattr(data, "ndim", None) != 1 or getattr(getattr(data, "dtype", None), "kind", None) != "U":
                    raise ValueError(
                        f"polygrad.load_npz: {NONE_KEY!r} in the file{self._file()} should list the keys saved as None "
                        f"(a 1-d array of strings), got {type(data).__name__} {getattr(data, 'dtype', '')}"
                    )
                keys = frozenset(str(k) for k in data.tolist())
            reads.none_keys = keys
        return reads.none_keys

    def _where_keys_are(self, full: str) -> tuple[str, bool]:
        """For the error of key ``full``, not in the file: which keys the file holds nearest to it (a
        ``path="model"`` glued to each key, ``'modell1/W'``, where the file has ``model/l1/W``: did
        you mean ``path="model/"``?), and whether ``strict=False`` can help (False where ``path`` fits
        no key of the file: it would load nothing)."""
        keys = sorted(set(self.npz.files) - {NONE_KEY} | self._none_keys())
        root = self._reads.path

        def some(under: list[str]) -> str:
            more = f" and {len(under) - 4} more" if len(under) > 4 else ""
            return ", ".join(map(repr, under[:4])) + more

        if root and not root.endswith("/"):
            under = [k for k in keys if k.startswith(root + "/")]
            if under:
                return (f"path={root!r} is put before each key as it is (giving {full!r}), and the file holds "
                        f"keys under {root + '/'!r} ({some(under)}): did you mean path={root + '/'!r}?"), False
        if root and not any(k.startswith(root) for k in keys):
            return f"no key of the file starts with path={root!r}; it holds {some(keys) or 'none'}", False
        parts = full.split("/")
        for i in range(len(parts) - 1, -1, -1):
            prefix = "".join(p + "/" for p in parts[:i])
            under = [k for k in keys if k.startswith(prefix)]
            if under:
                where = f"under {prefix!r} it holds" if prefix else "it holds"
                return f"{where} {some(under)}", True
        return "it holds no key", True

    def _require_found(self) -> None:
        """Refuse a load with ``strict=False`` that found none of the keys it read (a wrong
        ``path=``, another model's file): it loaded nothing and said nothing. Called after the
        first pass of :func:`serialize`, so nothing has changed."""
        reads = self._reads
        if reads.missing and not reads.found:
            first = reads.missing[0]
            hint, _ = self._where_keys_are(first)
            shown = ", ".join(map(repr, reads.missing[:4])) + (" ..." if len(reads.missing) > 4 else "")
            raise KeyError(f"polygrad.load_npz: none of the {len(reads.missing)} keys read ({shown}) is in the "
                           f"file{self._file()}, so nothing would load (strict=False is for a file that lacks some of "
                           f"them); {hint}")

    def _read(self, full: str, value: Any) -> Any:
        reads = self._reads
        if full not in self.npz.files:
            if full in self._none_keys():
                reads.found = True
                return None
            if not self.strict:
                if full not in reads.missing:
                    reads.missing.append(full)
                return _MISSING
            hint, may_skip = self._where_keys_are(full)
            skip = "; pass strict=False to leave what is missing unchanged" if may_skip else ""
            raise KeyError(f"polygrad.load_npz: {full!r} is not in the file{self._file()} "
                           f"({len(self.npz.files)} keys): {hint}{skip}")
        reads.found = True
        try:
            data = self.npz[full]
        except Exception as exc:  # an object array (never unpickled), a damaged member
            raise ValueError(f"polygrad.load_npz: cannot read {full!r} in the file{self._file()}: {type(exc).__name__}: {exc}") from exc
        if not (hasattr(data, "shape") and hasattr(data, "dtype")):
            raise ValueError(
                f"polygrad.load_npz: {full!r} in the file{self._file()} is not an array but a {type(data).__name__} "
                "(an archive member that is not a .npy file)"
            )
        if value is None:
            return data
        if isinstance(value, _SCALARS):
            if data.shape != ():
                raise ValueError(f"polygrad.load_npz: {full!r} holds an array of shape {data.shape}, expected a scalar")
            self._check_kind(full, _npz_backend().xp, data.dtype, _scalar_kind(value), type(value).__name__)
            return type(value)(data.item())
        if not (hasattr(value, "shape") and hasattr(value, "dtype")):
            raise TypeError(f"polygrad.load_npz: cannot load {full!r} into a {type(value).__name__}: {_STORABLE}")
        shape = tuple(value.shape)
        if tuple(data.shape) != shape:
            raise ValueError(
                f"polygrad.load_npz: shape mismatch for {full!r}: the file has shape {tuple(data.shape)}, "
                f"the target has shape {shape}"
            )
        backend = backend_of_type(type(value))
        out = _from_numpy(data, backend)
        if out.dtype != value.dtype:
            xp = backend.xp
            self._check_kind(full, xp, out.dtype, dtype_kind_of(xp, value.dtype), value.dtype)
            out = xp.astype(out, value.dtype)
        if not out.shape and type(out) is not type(value):
            # an array library's scalar (numpy.float32) loads as one of its type, as in Chainer (a 0-d array in
            # its place is unhashable, and prints as an array)
            out = type(value)(out)
        return out

    def _check_kind(self, full: str, xp: Any, dtype: Any, target: int | None, target_name: Any) -> None:
        check_kind(f"polygrad.load_npz: {full!r} in the file{self._file()}", xp, dtype, target, target_name)


def check_kind(what: str, xp: Any, dtype: Any, target: int | None, target_name: Any,
               advice: str = "give it a target of that kind") -> None:
    """Refuse a stored dtype of a higher kind than the target's (NumPy's ``same_kind`` rule):
    float into int truncates, int into bool and complex into real lose values. ``what`` names
    the stored value; ``target`` is the target's kind (:func:`dtype_kind_of`); ``advice`` ends
    the error."""
    have = dtype_kind_of(xp, dtype)
    if have is not None and target is not None and have > target:
        raise TypeError(
            f"{what} holds {dtype} values, which a target of {target_name} "
            f"cannot take without changing them ({_KIND_NAMES[have]} into {_KIND_NAMES[target]}); {advice}"
        )


#: Kinds of values in the order a cast may go without changing values in kind (NumPy's
#: ``same_kind``): a Python scalar target's kind is its type's position here.
_KIND_NAMES = ("bool", "integral", "real floating", "complex floating")
_SCALAR_KINDS = (bool, int, float, complex)  # the Python type of each kind, in the same order
_STORABLE = "a .npz file stores arrays, Python scalars (bool, int, float, complex) and None"


def _scalar_kind(value: Any) -> int:
    """The kind of a Python scalar (a bool is an int too: it is asked first)."""
    return next(k for k, t in enumerate(_SCALAR_KINDS) if isinstance(value, t))


def dtype_kind_of(xp: Any, dtype: Any) -> int | None:
    """The position of ``dtype``'s kind in :data:`_KIND_NAMES` (None for another kind)."""
    for k, name in enumerate(_KIND_NAMES):
        if xp.isdtype(dtype, name):
            return k
    return None


def _signature(value: Any) -> Any:
    """What a read is converted for: None, a scalar type, or an array's type, shape and dtype."""
    if value is None or isinstance(value, _SCALARS) or not hasattr(value, "shape"):
        return type(value)
    return (type(value), tuple(value.shape), str(value.dtype))


# ---------------------------------------------------------------------------
# Objects
# ---------------------------------------------------------------------------


def serialize(obj: Any, serializer: Any) -> None:
    """Run ``obj.serialize(serializer)`` (Chainer's protocol; an object with
    ``namedparams()`` but no ``serialize`` has its parameters serialized).

    With a deserializer from this module, loading is all-or-nothing: a first
    pass reads and checks every value while ``obj`` gets its own values back,
    then a second pass hands it the loaded ones; should that pass still fail
    (a ``serialize`` whose keys depend on loaded values, or that refuses a
    loaded value without asking ``stored``), what ``obj`` serializes is given
    back to it (its values saved before the second pass), and its links are
    put back exactly as they were.
    """
    method = getattr(obj, "serialize", None)
    if not callable(method):
        if not callable(getattr(obj, "namedparams", None)):
            raise TypeError(
                f"polygrad: cannot serialize a {type(obj).__name__}: it has neither serialize(serializer) nor namedparams()"
            )
        method = lambda s: _serialize_params(obj, s)  # noqa: E731
    reads = getattr(serializer, "_reads", None)
    if not getattr(serializer, "loading", False) or reads is None or reads.dry:
        method(serializer)  # (a serialize within the first pass of another: that pass is its first too)
        return
    reads.dry = True
    try:
        method(serializer)
    finally:
        reads.dry = False
    serializer._require_found()
    before = _snapshot(obj)
    own: dict[str, Any] = {}
    method(DictionarySerializer(own))  # what obj holds now, to give back through its serialize
    try:
        method(serializer)
    except BaseException as exc:
        try:  # everything obj serializes (an optimizer, an iterator of a snapshot), then its links exactly
            method(_GivingBack(own))
        except BaseException as again:
            if hasattr(exc, "add_note"):
                exc.add_note(f"polygrad.load_npz: putting the object back failed too ({type(again).__name__}: "
                             f"{again}): it may be partly loaded")
        _restore(before)
        raise


class _GivingBack:
    """A deserializer giving back what :class:`DictionarySerializer` collected from the object (its
    values before a load that failed in its second pass); a key it lacks leaves the value as it is."""

    loading = True

    def __init__(self, target: dict, path: str = "") -> None:
        self.target = target
        self.path = path

    def __getitem__(self, key: str) -> "_GivingBack":
        return _GivingBack(self.target, self.path + key.strip("/") + "/")

    def __call__(self, key: str, value: Any) -> Any:
        return self.target.get(self.path + key.lstrip("/"), value)

    stored = __call__


def _serialize_params(obj: Any, serializer: Any) -> None:
    from polygrad.backends import get_backend, to_backend

    for path, param in obj.namedparams(include_uninit=True):
        data = serializer(path.lstrip("/"), param.data)
        if data is not param.data:
            param.data = data if param.data is not None or data is None else to_backend(data, get_backend().name)
        elif param.data is None and callable(getattr(serializer, "will_initialize", None)):
            serializer.will_initialize(path.lstrip("/"), param, lambda a: to_backend(a, get_backend().name))


def _snapshot(obj: Any) -> list:
    """The attributes and parameter arrays (with their gradients: a load clears or zeros some) of
    ``obj``'s links, to put back after a failed load."""
    links = list(obj.links()) if callable(getattr(obj, "links", None)) else []
    return [(link, dict(link.__dict__), [(p, p.data, p._grad) for p in link.params()]) for link in links]


def _restore(snapshot: list) -> None:
    for link, attrs, params in snapshot:
        link.__dict__.clear()
        link.__dict__.update(attrs)
        for p, data, grad in params:
            p.data = data
            p._grad = grad


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
    names = backends()
    if "numpy" in names and names["numpy"].usable:  # installed, but older than its npz hooks
        raise RuntimeError(f"polygrad: saving and loading .npz files needs the polygrad_save_npz and "
                           f"polygrad_load_npz hooks of the plugin providing the numpy backend "
                           f"({get_backend('numpy').origin}), which has none: a polygrad-numpy older than those hooks; "
                           f"upgrade it (pip install -U polygrad-numpy)")
    raise RuntimeError("polygrad: saving and loading .npz files needs the numpy backend (pip install polygrad-numpy)")


def save_npz(file: Any, obj: Any, compression: bool = True) -> None:
    """Save ``obj`` (a Link or an optimizer) to ``file``: a path, written under
    exactly that name (no ``.npz`` is added, as in Chainer), or a binary file object.

    A path is written through a temporary file in the same folder, renamed
    over ``file`` at the end, so a failed save leaves no half-written file.
    A symbolic link is followed: the file it points to gets the new contents
    (a hard link's other names keep the old file, which the rename replaces).
    An existing file keeps its mode; a new one gets 0o666 less the umask, as
    ``open(file, "wb")`` gives it.
    """
    from polygrad.backends import compute

    target: dict[str, Any] = {}
    serialize(obj, DictionarySerializer(target))
    keys = [k for k, v in target.items() if v is not None]
    for k in keys:
        v = target[k]
        if isinstance(v, Variable) or not isinstance(v, _SCALARS) and not (hasattr(v, "shape") and hasattr(v, "dtype")):
            hint = " (a Variable could not be loaded back: give its .data)" if isinstance(v, Variable) else ""
            raise TypeError(f"polygrad.save_npz: cannot save {k!r}, a {type(v).__name__}: {_STORABLE}{hint}")
    values = compute(*(target[k] for k in keys))  # lazy arrays: one pass per backend
    npz = _npz_backend()
    arrays = {k: _to_npz_backend(v, npz) for k, v in zip(keys, values)}
    for k, a in arrays.items():
        # an array of Python objects (an int past int64 and uint64 becomes one) is pickled by the file's
        # backend and load_npz reads without pickle: refused here, not found out when the file is needed
        if getattr(a.dtype, "kind", None) == "O":
            v = target[k]
            what = (f"the int {v}, outside int64 and uint64" if isinstance(v, int)
                    else f"an array of Python objects ({type(v).__name__} of dtype {v.dtype})")
            raise TypeError(f"polygrad.save_npz: cannot save {k!r}, {what}: the file would pickle it, and load_npz "
                            f"reads no pickle; {_STORABLE}")
    nones = [k for k, v in target.items() if v is None]
    if nones:
        arrays[NONE_KEY] = npz.xp.asarray(nones)  # strings: numpy's .npz stores them without pickle
    if not isinstance(file, (str, os.PathLike)):
        npz.save_npz(file, arrays, compression)
        return
    # a link is written through, as open(path, "wb") writes (Chainer, numpy.savez): renaming over the link itself
    # left its target, the file every other name of it reads, holding the old checkpoint
    real = os.path.realpath(os.fspath(file))
    tmp, fd = _new_file_next_to(real, os.fspath(file))
    try:
        with os.fdopen(fd, "wb") as f:
            npz.save_npz(f, arrays, compression)
        if os.path.exists(real):  # the mode it had (0o644 read by an evaluation job), as a write into it keeps it
            os.chmod(tmp, stat.S_IMODE(os.stat(real).st_mode))
        os.replace(tmp, real)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _new_file_next_to(real: str, given: str) -> tuple[str, int]:
    """``(name, descriptor)`` of a new file in ``real``'s folder, created as ``open(real, "wb")`` would
    create ``real``: mode 0o666 less the umask (``tempfile.mkstemp``'s 0o600 made every checkpoint
    unreadable to the group and to other users, whatever the umask). Its error (no such folder, no
    permission) names ``given``, the path the caller gave, as ``open`` would (it named the random
    temporary file)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    folder = os.path.dirname(real)
    for _ in range(100):
        tmp = os.path.join(folder, f".polygrad-{secrets.token_hex(8)}.npz.tmp")
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        except OSError as exc:
            where = f" (its real folder {folder!r})" if os.path.dirname(os.path.abspath(given)) != folder else ""
            raise type(exc)(exc.errno, f"polygrad.save_npz: cannot write the file{where}: {exc.strerror}",
                            given) from None
    raise FileExistsError(f"polygrad.save_npz: no unused name for a temporary file in {folder!r}")


def load_npz(file: Any, obj: Any, path: str = "", strict: bool = True) -> None:
    """Load ``obj`` (a Link or an optimizer) from ``file``, written by :func:`save_npz`
    (a path, read under exactly that name, or a binary file object).

    :param path: a prefix of the keys to read (``"model/"`` reads ``model/l1/W``
        into ``l1/W``), put before each key as it is, as in Chainer (a key not
        found with ``path="model"`` says that the file has keys under ``"model/"``).
    :param strict: if False, keys missing from the file leave their values unchanged;
        a load that finds none of its keys is refused all the same (it would load nothing).
    :raises KeyError: a key is not in the file (``strict=True``), or none is (either way); it
        names the keys the file holds nearest to it.
    :raises FileNotFoundError: no such file (saying so when ``file + ".npz"``
        exists, as numpy's ``savez`` would have named it).
    :raises ValueError: the file is not an ``.npz`` archive (a ``.npy`` file
        holds one array), a member is not an array, or an array does not fit.
    """
    name = repr(os.fspath(file)) if isinstance(file, (str, os.PathLike)) else f"the file object {file!r}"
    if isinstance(file, (str, os.PathLike)) and not os.path.exists(file):
        other = os.fspath(file) + ".npz"
        hint = (f"; there is {other!r} (numpy's savez adds .npz to a name without it, "
                "polygrad's save_npz writes the name given): load that") if os.path.exists(other) else ""
        raise FileNotFoundError(f"polygrad.load_npz: no such file {name}{hint}")
    try:
        archive = _npz_backend().load_npz(file)
    except OSError:
        raise
    except Exception as exc:
        raise ValueError(f"polygrad.load_npz: cannot read {name} as an .npz archive: {type(exc).__name__}: {exc}") from exc
    if not hasattr(archive, "files"):
        kind = f"one array of shape {tuple(archive.shape)}" if hasattr(archive, "shape") else f"a {type(archive).__name__}"
        raise ValueError(
            f"polygrad.load_npz: {name} holds {kind} (a .npy file), not an .npz archive of named arrays; "
            "write one with polygrad.serializers.save_npz"
        )
    with archive as npz:
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
