"""Links: objects that hold parameters (Chainer's Link, Chain, ChainList and
Sequential), the layers Linear, Convolution2D, EmbedID, BatchNormalization and
LayerNormalization, and the Classifier model."""

from __future__ import annotations

import contextlib
import copy
import math
from typing import Any, Iterator

from polygrad.backends import get_backend, to_backend
from polygrad.core.dispatch import backend_of_type, is_array
from polygrad.core.integers import as_int
from polygrad.core.variable import Variable, admit_grad, kind_of
from polygrad.optimizers import require_leaf

__all__ = [
    "Link", "Chain", "ChainList", "Sequential", "Classifier",
    "Linear", "Convolution2D", "EmbedID", "BatchNormalization", "LayerNormalization",
]


class _ParamsOf:
    """The iterator :meth:`Link.params` returns: the parameters, and the link they belong to.
    ``pg.optim`` reads ``link`` to persist the link's running statistics with the parameters
    on a lazy backend (the graphs of dask statistics otherwise grow at every step)."""

    def __init__(self, link: "Link", params: Iterator[Variable]) -> None:
        self.link = link
        self._params = params

    def __iter__(self) -> "_ParamsOf":
        return self

    def __next__(self) -> Variable:
        return next(self._params)


class Link:
    """A holder of parameters (Variables). Assign them inside ``init_scope()``.

    >>> import polygrad as pg
    >>> class Scale(pg.Link):
    ...     def __init__(self):
    ...         super().__init__()
    ...         with self.init_scope():
    ...             self.a = pg.Variable(pg.asarray([2.0]))
    ...     def forward(self, x):
    ...         return self.a * x
    """

    #: Where this link creates parameters it has not initialized yet: a backend
    #: name (None: the current backend) and a dtype (None: none of its own).
    #: Layers set them from ``backend=`` and ``dtype=``; ``to_backend`` moves the backend.
    _backend_name: str | None = None
    _dtype: Any = None

    def __init__(self, **params: Any) -> None:
        object.__setattr__(self, "_params", [])
        object.__setattr__(self, "_within_init_scope", False)
        object.__setattr__(self, "name", None)
        for k, v in params.items():  # (Chainer's Link(W=(3, 2)) takes shapes: it made a plain attribute here)
            if not isinstance(v, Variable):
                raise TypeError(f"polygrad: {type(self).__name__}({k}=...) takes a Variable (its parameter), got "
                                f"{type(v).__name__} {v!r}; for a parameter of a shape, pass "
                                f"pg.Variable(pg.zeros(shape)) or pg.Variable() (uninitialized)")
        with self.init_scope():
            for k, v in params.items():
                setattr(self, k, v)

    @contextlib.contextmanager
    def init_scope(self) -> Iterator[None]:
        """Inside this block, Variables (and, in a Chain, Links) assigned as attributes are registered."""
        old = self._within_init_scope
        object.__setattr__(self, "_within_init_scope", True)
        try:
            yield
        finally:
            object.__setattr__(self, "_within_init_scope", old)

    def __setattr__(self, name: str, value: Any) -> None:
        persistent = self._persistents()
        scope = self.__dict__.get("_within_init_scope")
        if isinstance(value, Variable) and (scope or name in self.__dict__.get("_params", ())):
            require_leaf(value, f"polygrad: parameter {name!r} of {type(self).__name__}")  # (an optimizer's rule)
        if scope and isinstance(value, Variable):
            if name in self.__dict__.get("_children", ()):
                raise AttributeError(f"polygrad: cannot register parameter {name!r}: {type(self).__name__} has a "
                                     "child link of that name (delete it first)")
            if value.name is None:
                value.name = name
            if name not in self._params:
                self._params.append(name)
            if name in persistent:  # a parameter now (Chainer's)
                persistent.remove(name)
        elif name in persistent:
            self._note_replaced(name)
            value = _persistent_value(value)
        super().__setattr__(name, value)

    def _persistents(self) -> list[str]:
        """The names of this link's persistent values: one list of its own, which every save, load,
        move and copy reads, started from a ``_persistent`` list of its class (a class-level
        ``_persistent = ["n"]`` was dropped once ``add_persistent`` made a list of the link's own,
        as ``BatchNormalization`` does; and it was shared by every link of the class)."""
        names = self.__dict__.get("_persistent")
        if names is None:
            names = list(getattr(type(self), "_persistent", ()))
            object.__setattr__(self, "_persistent", names)
        return names

    def _note_replaced(self, name: str) -> None:
        """Remember the value of persistent ``name`` that a write is about to replace (running
        statistics before a forward, a value before a load): an optimizer whose update fails
        puts it back where the new one cannot be computed (``GradientMethod._recover_buffers``).
        Every write of a persistent value but the optimizer's own notes it."""
        self.__dict__.setdefault("_replaced", {})[name] = self.__dict__.get(name)

    def __getstate__(self) -> dict:
        """For pickle and ``copy.deepcopy``: the link without the values its persistent
        assignments replaced (kept only to recover from a failed update: lazy graphs, possibly
        holding a batch)."""
        state = dict(self.__dict__)
        state.pop("_replaced", None)
        return state

    def add_persistent(self, name: str, value: Any) -> None:
        """Register a value that is saved and loaded with the link but is not a
        parameter (running statistics), as Chainer's ``add_persistent``: an array, a
        Python scalar or None. A Variable (``pg.zeros(3)``) is kept as its array, here
        and when it is assigned later: a persistent value is never differentiated."""
        if name in self._params:  # (it would be both, and neither would save or load: Chainer refuses too)
            raise AttributeError(f"polygrad: cannot register persistent value {name!r}: {type(self).__name__} has a "
                                 f"parameter of that name")
        persistent = self._persistents()
        if name not in persistent and name in self.__dict__:  # (a child link's name broke the chain for good)
            raise AttributeError(f"polygrad: cannot register persistent value {name!r}: {type(self).__name__} "
                                 "already has an attribute of that name")
        if name not in persistent:
            persistent.append(name)
        object.__setattr__(self, name, _persistent_value(value))

    def __delattr__(self, name: str) -> None:
        if name in self._params:
            self._params.remove(name)
        persistent = self._persistents()
        if name in persistent:
            persistent.remove(name)
        super().__delattr__(name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        forward = getattr(self, "forward", None)
        if forward is None:
            raise NotImplementedError(f"polygrad: {type(self).__name__} defines neither forward nor __call__")
        return forward(*args, **kwargs)

    # -- children: none here; a Chain names them by attribute, a ChainList by index --
    def _named_children(self) -> Iterator[tuple[str, "Link"]]:
        """``(name, child)`` pairs; every walk below (parameters, links, moving,
        copying, serializing) goes through this."""
        return iter(())

    def children(self) -> Iterator["Link"]:
        """The child links (none for a plain Link)."""
        for _, child in self._named_children():
            yield child

    # -- parameters -------------------------------------------------------------
    def namedparams(self, include_uninit: bool = True) -> Iterator[tuple[str, Variable]]:
        """``("/name", param)`` pairs, children's prefixed by their path (``"/l1/W"``, ``"/0/W"``)."""
        for name in self._params:
            p = getattr(self, name)
            if include_uninit or p.data is not None:
                yield "/" + name, p
        for name, child in self._named_children():
            for path, p in child.namedparams(include_uninit):
                yield "/" + name + path, p

    def params(self, include_uninit: bool = True) -> Iterator[Variable]:
        """Every parameter, children's too: an iterator that also names this link (``.link``), so
        that ``pg.optim.SGD(model.params(), lr)`` finds the model's running statistics."""
        return _ParamsOf(self, (p for _, p in self.namedparams(include_uninit)))

    def links(self, skipself: bool = False) -> Iterator["Link"]:
        """This link (unless ``skipself``) and every link below it."""
        if not skipself:
            yield self
        for _, child in self._named_children():
            yield from child.links()

    def cleargrads(self) -> None:
        """Set every parameter's gradient to None (a parameter not initialized yet forgets a
        :meth:`zerograds` too)."""
        for link in self.links():
            link.__dict__.pop("_zerograd_at_init", None)
        for p in self.params():
            p.cleargrad()

    def zerograds(self) -> None:
        """Set every parameter's gradient to zeros; a parameter not initialized yet (``W`` of
        ``Linear(None, n)``) gets them when it is, as Chainer's ``Parameter.zerograd``."""
        for link in self.links():
            waiting = {name for name in link._params if getattr(link, name).data is None}
            if waiting:
                link.__dict__.setdefault("_zerograd_at_init", set()).update(waiting)
        for p in self.params(include_uninit=False):
            p.zerograd()

    def _set_param(self, name: str, data: Any) -> None:
        """Give parameter ``name`` the array ``data``: every initialization of a parameter goes
        through here, so one that :meth:`zerograds` found uninitialized gets zeros for its
        gradient now (Chainer's ``Parameter.initialize``)."""
        p = getattr(self, name)
        first = p.data is None and data is not None
        p.data = data
        if first and name in self.__dict__.get("_zerograd_at_init", ()):
            p.zerograd()

    def addgrads(self, link: "Link") -> None:
        """Add the gradients of ``link``'s parameters to this link's, parameter by name (Chainer's
        ``addgrads``: sum the gradients that copies of a model computed). The links must have the
        same parameters, of the same shapes and kinds of dtype; each pair is checked before any
        gradient is added. A gradient of another precision is added into this one, which keeps its
        dtype (Chainer's in-place ``+=``). All or nothing: every sum is computed (each gradient
        moved to this link's backend first) before any gradient is replaced, so a failure (a
        dtype the backend lacks, a chunk that fails to compute) names the parameter and adds
        nothing."""
        mine, theirs = dict(self.namedparams()), dict(link.namedparams())
        if mine.keys() != theirs.keys():
            missing, extra = sorted(mine.keys() - theirs.keys()), sorted(theirs.keys() - mine.keys())
            raise ValueError(f"polygrad: addgrads: {type(link).__name__} has other parameters than "
                             f"{type(self).__name__} (missing {missing}, extra {extra})")
        for name, p in mine.items():
            q = theirs[name]
            other = q.grad if q.grad is not None else q.data
            if other is None or (p.data is None and q.grad is None):
                continue
            if p.data is None or tuple(other.shape) != tuple(p.shape) or (
                    kind_of(other) != kind_of(p.data)):
                what = "a gradient" if q.grad is not None else "an array"
                have = "not initialized" if p.data is None else f"{p.dtype} {tuple(p.shape)}"
                raise ValueError(f"polygrad: addgrads: {name} of {type(link).__name__} has {what} of "
                                 f"{other.dtype} {tuple(other.shape)}, here it is {have}")
        sums: dict = {}  # id(parameter) -> (parameter, its new gradient): one listed under several names
        for name, p in mine.items():  # (a link registered twice) gets each name's gradient, as in Chainer
            g = theirs[name].grad
            if g is None:
                continue
            try:
                xp = p.xp
                base = sums[id(p)][1] if id(p) in sums else p.grad
                if backend_of_type(type(g)) is not p.backend:
                    g = to_backend(g, p.backend.name)
                elif base is None:
                    g = xp.asarray(g, copy=True)  # p.grad never shares the other's array
                new = g if base is None else base + g
                sums[id(p)] = (p, admit_grad(new, p.data, f"the gradient of {name}", user=True))
            except Exception as exc:
                _reraise_naming(exc, f"polygrad: addgrads: adding {type(link).__name__}'s gradient of {name} failed "
                                     f"(no gradient was added)")
        for p, new in sums.values():
            p.grad = new

    def to_backend(self, name: str) -> "Link":
        """Move this link's parameters (with their gradients) and persistent arrays to
        backend ``name``, in place; returns self. Parameters not initialized yet
        will be created there. Children are moved with their own ``to_backend``,
        so a child that overrides it is moved its way.

        All or nothing for the links moved the default way: every array is moved before
        any is replaced, so a failure (a dtype the backend lacks, a chunk that fails to
        compute, a backend not usable here) names the value and moves nothing. A child
        that overrides ``to_backend`` is moved after them, and its error says so."""
        get_backend(name).require_usable()  # (a link with nothing initialized was marked for it anyway)
        moves: list = []  # (param, data, grad) and (link, persistent name, value)
        links: list = []  # the links moved the default way
        custom: list = []  # (path, child) for the children that override to_backend
        self._plan_move(name, "", moves, links, custom, set())
        for owner, attr, value in moves:
            if isinstance(owner, Variable):
                owner.data = attr
                if value is not None:
                    owner.grad = value
            else:
                object.__setattr__(owner, attr, value)
        for link in links:
            link.__dict__.pop("_replaced", None)  # (values of the old backend)
            object.__setattr__(link, "_backend_name", name)  # where parameters not initialized yet will be created
        for path, child in custom:
            try:
                child.to_backend(name)
            except Exception as exc:
                _reraise_naming(exc, f"polygrad: to_backend({name!r}): the child {path} (its own to_backend) failed "
                                     f"after the links moved the default way were moved")
        return self

    def _plan_move(self, name: str, prefix: str, moves: list, links: list, custom: list, seen: set) -> None:
        """Append to ``moves`` this link's arrays (and its children's, those moved the default way)
        moved to backend ``name``, changing nothing (see :meth:`to_backend`)."""
        for pname in self._params:
            p = getattr(self, pname)
            if p.data is not None and id(p) not in seen:
                seen.add(id(p))
                path = repr(f"{prefix}/{pname}")
                grad = p.grad
                moves.append((p, _moved_to(p.data, name, f"parameter {path}"),
                              None if grad is None else _moved_to(grad, name, f"the gradient of parameter {path}")))
        for pname in self._persistents():
            value = getattr(self, pname)
            if is_array(value):
                moves.append((self, pname, _moved_to(value, name, f"persistent value '{prefix}/{pname}'")))
        links.append(self)
        for cname, child in self._named_children():
            if type(child).to_backend is not Link.to_backend:
                custom.append((f"{prefix}/{cname}", child))
            else:
                child._plan_move(name, f"{prefix}/{cname}", moves, links, custom, seen)

    def _creation_site(self) -> tuple[Any, Any]:
        """The backend and dtype in which this link creates a parameter it has not
        initialized yet (and so where an array loaded or copied into one goes): the
        backend of its initialized parameters, else the one it was given (``backend=``,
        ``to_backend``), else the current one; its ``dtype=`` (None when it has none)."""
        backend = None
        for pname in self._params:
            data = getattr(self, pname).data
            if data is not None:
                backend = backend_of_type(type(data))
                break
        if backend is None:
            backend = get_backend(self._backend_name)
        return backend, None if self._dtype is None else _as_dtype(backend.xp, self._dtype)

    def _uninitialized_shape(self, pname: str) -> tuple | None:
        """The shape parameter ``pname``, not initialized yet, will have: None on an axis the link
        takes from its first input, and None for the whole where it knows none of it. An array
        loaded or copied into the parameter must fit it (:meth:`_adopt`)."""
        return None

    def _adopt(self, array: Any, what: str = "", param: str | None = None) -> Any:
        """``array``, for a value of this link not initialized yet, put where the link would have
        created it (:meth:`_creation_site`). For ``param`` (a parameter's name; None: a persistent
        value, which keeps its dtype) it must fit the shape the link knows
        (:meth:`_uninitialized_shape`: ``Linear(None, 5)`` took the W of ``Linear(4, 3)`` and gave
        3 features), and it takes the link's dtype, where one of a higher kind is refused as into an
        initialized value (complex into a float32 link lost its imaginary part). ``what`` names the
        value for those errors."""
        known = None if param is None else self._uninitialized_shape(param)
        if known is not None:
            shape = tuple(array.shape)
            if len(shape) != len(known) or any(k is not None and k != n for k, n in zip(known, shape)):
                raise ValueError(f"{what}: an array of shape {shape} does not fit {param} of {type(self).__name__}, "
                                 f"of shape {known} (None: a size taken from the array, as from the first input)")
        backend, dtype = self._creation_site()
        out = to_backend(array, backend.name)
        if param is None or dtype is None or out.dtype == dtype:
            return out
        from polygrad.serializers import check_kind, dtype_kind_of

        xp = backend.xp
        check_kind(what, xp, out.dtype, dtype_kind_of(xp, dtype), getattr(dtype, "__name__", dtype))  # (np.float32)
        return xp.astype(out, dtype)

    def copyparams(self, link: "Link", copy_persistent: bool = True) -> None:
        """Copy the values of ``link``'s parameters (and persistent arrays) into this
        link's, which must have the same structure (Chainer's ``copyparams``).

        Each value is copied onto the backend and dtype of the one it replaces
        (into a value not initialized yet, where the link would have created
        it, as :meth:`serialize` loads one); the two links share no array
        afterwards. All or nothing: every value is checked and copied before
        any is assigned, so a link of another structure raises and leaves
        this one as it was.
        """
        params: list = []
        persistents: list = []
        self._plan_copy(link, copy_persistent, params, persistents, "")
        for owner, pname, value in params:
            owner._set_param(pname, value)
        for owner, name, value in persistents:
            owner._note_replaced(name)
            object.__setattr__(owner, name, value)

    def _plan_copy(self, link: "Link", copy_persistent: bool, params: list, persistents: list, prefix: str) -> None:
        """Check ``link`` against this link and its children, appending the copies
        ``copyparams`` assigns: ``(link, parameter name, array)`` and ``(link, name, value)``;
        ``prefix``: this link's path in the one copied into (``/l2``), for the errors."""
        src = dict(link.__dict__)
        for pname in self._params:
            p, q = getattr(self, pname), src.get(pname)
            if not isinstance(q, Variable):
                raise ValueError(f"polygrad: copyparams: {type(link).__name__} has no parameter {pname!r}")
            if q.data is None and p.data is not None:  # (this link kept its own values, unlike the other's)
                raise ValueError(f"polygrad: copyparams: parameter {pname!r} of {type(link).__name__} is not "
                                 "initialized yet, and this link's is: run the other link once first")
            if q.data is not None:
                params.append((self, pname, self._copy_into(q.data, p.data, f"parameter '{prefix}/{pname}'", pname)))
        if copy_persistent:
            for pname in self._persistents():
                if pname not in src:
                    raise ValueError(f"polygrad: copyparams: {type(link).__name__} has no persistent value {pname!r}")
                value = src[pname]
                if is_array(value):
                    value = self._copy_into(value, getattr(self, pname), f"persistent value '{prefix}/{pname}'")
                else:  # (a list or a dict was shared by the two links)
                    value = copy.deepcopy(value)
                persistents.append((self, pname, value))
        others = dict(link._named_children())
        for cname, child in self._named_children():
            if cname not in others:
                raise ValueError(f"polygrad: copyparams: {type(link).__name__} has no child link {cname!r}")
            child._plan_copy(others[cname], copy_persistent, params, persistents, f"{prefix}/{cname}")

    def _copy_into(self, src: Any, like: Any, what: str, param: str | None = None) -> Any:
        """A copy of array ``src`` for the value ``like`` (named by ``what``; parameter ``param``, None
        for a persistent value) of this link: on its backend and in its dtype, or, where ``like`` is
        not an array yet, put as :meth:`_adopt` puts it."""
        if is_array(like):
            return _copy_like(src, like, what)
        return self._adopt(backend_of_type(type(src)).xp.asarray(src, copy=True), f"polygrad: copyparams: {what}",
                           param)

    def serialize(self, serializer: Any) -> None:
        """Save or load this link's parameters and persistent values through
        ``serializer`` (Chainer's protocol; see :mod:`polygrad.serializers`).

        ``value = serializer(key, value)`` saves a value (returning it) or
        returns the loaded one. A Chain then serializes each child with the
        child's own ``serialize(serializer[name])``, so a link that overrides
        this method to save more state is saved and loaded its way, anywhere
        in a model.

        A parameter not initialized yet takes the loaded array where the link
        would have created it: on the backend of its other parameters (else
        its ``backend=`` or last ``to_backend``, else the current one) and in
        its ``dtype=``; a persistent value that is None takes it on that
        backend, in the file's dtype. A None in the file (a value that was not
        initialized when it was saved) makes the value None again, and a
        parameter then loses its gradient too.
        """
        for pname in self._params:
            p = getattr(self, pname)
            data = serializer(pname, p.data)
            # (the key as the serializer's path names it: 'l1/W')
            what = f"polygrad: {type(self).__name__}.serialize: {getattr(serializer, 'path', '') + pname!r}"
            if data is not p.data:
                if data is None:
                    p.cleargrad()
                elif p.data is None:
                    data = self._adopt(data, what, pname)
                self._set_param(pname, data)
            elif p.data is None and callable(getattr(serializer, "will_initialize", None)):
                # (the first pass of a load: an optimizer loaded next checks its state against that array;
                # a dtype it cannot take is refused there, before anything changes)
                serializer.will_initialize(pname, p, lambda a, what=what, pname=pname: self._adopt(a, what, pname))
        for pname in self._persistents():
            value = getattr(self, pname)
            data = serializer(pname, value)
            if data is not value:
                if value is None and is_array(data):
                    data = self._adopt(data)
                self._note_replaced(pname)
                object.__setattr__(self, pname, data)
        for cname, child in self._named_children():
            child.serialize(serializer[cname])

    def count_params(self) -> int:
        return sum(int(p.size) for p in self.params(include_uninit=False))


def _persistent_value(value: Any) -> Any:
    """What a persistent value holds: a Variable's array (saving, loading, copying and moving
    a link handle arrays and scalars; a Variable kept there was saved but could not be loaded)."""
    return value.data if isinstance(value, Variable) else value


class Chain(Link):
    """A Link made of child Links (registered in ``init_scope()`` or as keyword arguments)."""

    def __init__(self, **links: Any) -> None:
        object.__setattr__(self, "_children", [])
        super().__init__()
        with self.init_scope():
            for k, v in links.items():
                setattr(self, k, v)

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_within_init_scope") and isinstance(value, Link):
            if name in self._params or name in self._persistents():
                # (params() then listed the link itself as a parameter)
                raise AttributeError(f"polygrad: cannot register link {name!r}: {type(self).__name__} has a "
                                     "parameter or persistent value of that name (delete it first)")
            if name not in self._children:
                self._children.append(name)
            object.__setattr__(value, "name", name)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._children:
            self._children.remove(name)
        super().__delattr__(name)

    def _named_children(self) -> Iterator[tuple[str, Link]]:
        for name in self._children:
            yield name, getattr(self, name)

    def add_link(self, name: str, link: Link) -> None:
        """Register ``link`` as the child ``name`` (as assigning it inside ``init_scope()``)."""
        if not isinstance(link, Link):
            raise TypeError(f"polygrad: Chain.add_link needs a Link, got {type(link).__name__}")
        if name in self.__dict__ and name not in self._children:
            raise AttributeError(f"polygrad: cannot add a link named {name!r}: the chain already has that attribute")
        with self.init_scope():
            setattr(self, name, link)


class ChainList(Link):
    """A Link made of child Links kept in a list (Chainer's ChainList): children
    are named by their index, so parameters are ``"/0/W"``, ``"/1/W"``, ...

    >>> import polygrad as pg, polygrad.links as L
    >>> layers = pg.ChainList(L.Linear(3, 4), L.Linear(4, 2))
    >>> layers.add_link(L.Linear(2, 2))
    >>> len(layers), [name for name, _ in layers[2].namedparams()], [n for n, _ in layers.namedparams()][:2]
    (3, ['/W', '/b'], ['/0/W', '/0/b'])
    """

    def __init__(self, *links: Link) -> None:
        object.__setattr__(self, "_children", [])
        super().__init__()
        for link in links:
            self.add_link(link)

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_within_init_scope") and isinstance(value, Link):
            raise TypeError(
                f"polygrad: a ChainList registers links with add_link(link) (or append), not as attributes ({name!r})"
            )
        super().__setattr__(name, value)

    def _named_children(self) -> Iterator[tuple[str, Link]]:
        for i, child in enumerate(self._children):
            yield str(i), child

    def _renumber(self) -> None:
        for i, child in enumerate(self._children):
            object.__setattr__(child, "name", str(i))

    def add_link(self, link: Link) -> None:
        """Append ``link`` as the next child (named by its index)."""
        if not isinstance(link, Link):
            raise TypeError(f"polygrad: {type(self).__name__}.add_link needs a Link, got {type(link).__name__}")
        self._children.append(link)
        self._renumber()

    def append(self, link: Link) -> None:
        """The same as :meth:`add_link`."""
        self.add_link(link)

    def __getitem__(self, index: Any) -> Any:
        return self._children[index]

    def __iter__(self) -> Iterator[Link]:
        return iter(self._children)

    def __len__(self) -> int:
        return len(self._children)


class Sequential(ChainList):
    """Layers applied in order (Chainer's Sequential): links and plain functions.

    ``Sequential(L.Linear(3, 4), F.relu, L.Linear(4, 2))(x)`` is
    ``l2(relu(l1(x)))``. Links are its children, numbered among the links
    only (``"/0/W"``, ``"/1/W"`` here); a layer that returns a tuple has it
    unpacked into the next one's arguments. It is a list of layers:
    indexing, ``len``, iteration, ``append``, ``insert``, ``extend``,
    ``pop``, ``remove``, ``index``, ``count``, ``del`` and item assignment.
    """

    def __init__(self, *layers: Any) -> None:
        object.__setattr__(self, "_layers", [])
        super().__init__()
        for layer in layers:
            self.append(layer)

    def _sync(self) -> None:
        self._children[:] = [layer for layer in self._layers if isinstance(layer, Link)]
        self._renumber()

    @staticmethod
    def _check(layer: Any) -> Any:
        if not callable(layer):
            raise TypeError(f"polygrad: a Sequential layer must be a Link or a function, got {type(layer).__name__}")
        return layer

    def forward(self, *x: Any) -> Any:
        if not self._layers:
            raise RuntimeError("polygrad: this Sequential has no layers")
        for layer in self._layers:
            x = layer(*x) if isinstance(x, tuple) else layer(x)
        return x

    def insert(self, index: int, layer: Any) -> None:
        n = len(self._layers)
        if not -n <= index <= n:  # (list.insert clamps: s.insert(10, f) on one layer appended; Chainer refuses)
            raise IndexError(f"polygrad: Sequential.insert: index {index} is out of range for {n} layers "
                             f"(from {-n} to {n})")
        self._layers.insert(index, self._check(layer))
        self._sync()

    def append(self, layer: Any) -> None:
        self.insert(len(self._layers), layer)

    add_link = append  # a link added to a Sequential is one of its layers

    def extend(self, layers: Any) -> None:
        for layer in list(layers):
            self.append(layer)

    def pop(self, index: int = -1) -> Any:
        layer = self._layers.pop(index)
        self._sync()
        return layer

    def remove(self, layer: Any) -> None:
        self._layers.remove(layer)
        self._sync()

    def index(self, layer: Any) -> int:
        return self._layers.index(layer)

    def count(self, layer: Any) -> int:
        return self._layers.count(layer)

    def __getitem__(self, index: Any) -> Any:
        return self._layers[index]

    def __setitem__(self, index: int, layer: Any) -> None:
        self._layers[index] = self._check(layer)
        self._sync()

    def __delitem__(self, index: Any) -> None:
        del self._layers[index]
        self._sync()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._layers)

    def __len__(self) -> int:
        return len(self._layers)

    def __contains__(self, layer: Any) -> bool:
        return layer in self._layers

    def __repr__(self) -> str:
        names = ", ".join(getattr(layer, "__name__", type(layer).__name__) for layer in self._layers)
        return f"Sequential({names})"


def _moved_to(array: Any, name: str, what: str) -> Any:
    """``array`` on backend ``name``; an error naming ``what`` (the value, by its path) where it cannot go."""
    try:
        return to_backend(array, name)
    except Exception as exc:
        _reraise_naming(exc, f"polygrad: to_backend({name!r}): moving {what} failed (nothing was moved)")


def _reraise_naming(exc: Exception, what: str) -> None:
    """Raise ``exc`` again with ``what`` (the method, the value, what was changed) in front of its
    message, of its type; where that type cannot be made from a message, ``exc`` with a note."""
    try:
        again = type(exc)(f"{what}: {exc}")
    except Exception:
        again = None
    if again is None:
        if hasattr(exc, "add_note"):
            exc.add_note(what)
        raise exc
    raise again from exc


def _as_dtype(xp: Any, dtype: Any) -> Any:
    return getattr(xp, dtype) if isinstance(dtype, str) else dtype


def _size(n: Any, what: str, link: str, least: int) -> int:
    """Size argument ``what`` of ``link`` as an int (NumPy's too) of at least ``least`` (1 where
    W's fan-in divides by it): a size out of range failed later, with numpy's "negative
    dimensions are not allowed" or a bare ZeroDivisionError."""
    from polygrad.ops.creation import count

    return count(n, what, f"links.{link}", least)


def _as_shape(size: Any, link: str) -> tuple[int, ...]:
    """A normalization link's ``size``, an int (NumPy's too) or a sequence of them, as a shape, each
    size checked by :func:`_size` (np.int64(3) was "'numpy.int64' object is not iterable", -3
    numpy's bare "negative dimensions are not allowed")."""
    if size is None:
        raise TypeError(f"polygrad.links.{link}: size=None (Chainer's size taken from the first input) is not "
                        f"supported; give size")
    if as_int(size) is not None or isinstance(size, bool):
        return (_size(size, "size", link, 0),)  # (a bool is refused there)
    if isinstance(size, str) or not hasattr(size, "__iter__"):
        raise TypeError(f"polygrad.links.{link}: size must be an int or a sequence of ints, got {size!r}")
    return tuple(_size(n, "size", link, 0) for n in size)


def _first_call(link: Link, names: tuple[str, ...], initialize: Any, call: Any) -> Variable:
    """``call()`` after ``initialize()`` gave ``link``'s parameters ``names``, uninitialized, their
    arrays from the first input; where either fails they are uninitialized again (a 3-D input to
    ``Convolution2D(None, ...)`` drew ``W`` for its height, LayerNormalization kept gamma of a refused
    input's shape, and every later input of the right shape failed)."""
    fresh = [name for name in names if getattr(link, name).data is None]
    try:
        initialize()
        return call()
    except BaseException:
        for name in fresh:
            param = getattr(link, name)
            param.data = None
            param.cleargrad()  # (zeros that zerograds() asked for, of the refused shape)
        raise


def _filled(backend: Any, value: Any, shape: tuple, dtype: Any, where: str) -> Any:
    """Chainer's constant initializer: ``value``, a number or an array, broadcast to the
    parameter's ``shape`` in a new array (the caller's array never becomes the parameter).
    ``where`` names the link and the argument for the error."""
    if callable(value):
        raise TypeError(f"polygrad.links.{where} takes a number or an array, got {type(value).__name__} "
                        "(an initializer object is not supported: pass its values as an array)")
    xp = backend.xp
    a = xp.asarray(value, dtype=dtype)
    given = tuple(a.shape)
    if given != shape:
        from polygrad.ops.manipulation import broadcast_shapes

        try:
            fills = broadcast_shapes(given, shape) == shape
        except ValueError:
            fills = False
        if not fills:
            raise ValueError(f"polygrad.links.{where}: an initial value of shape {given} does not fill "
                             f"the parameter's shape {shape}")
        a = xp.broadcast_to(a, shape)
    return xp.asarray(a, copy=True)


def _copy_like(src: Any, like: Any, what: str) -> Any:
    """A copy of array ``src`` on the backend and with the dtype of array ``like``; a dtype of
    a higher kind is refused (float into int truncated, int into uint8 wrapped: Chainer and
    ``load_npz`` refuse them too). ``what`` names the value."""
    if like.shape != src.shape:
        raise ValueError(f"polygrad: copyparams: {what} of the other link has shape {tuple(src.shape)}, this "
                         f"link's {tuple(like.shape)}")
    backend = backend_of_type(type(like))
    xp = backend.xp
    moved = to_backend(src, backend.name)
    out = xp.asarray(moved, copy=True)  # from_dlpack may share memory with src
    if out.dtype == like.dtype:
        return out
    from polygrad.serializers import check_kind, dtype_kind_of

    check_kind(f"polygrad: copyparams: {what}", xp, out.dtype, dtype_kind_of(xp, like.dtype), like.dtype)
    return xp.astype(out, like.dtype)


class _Connection(Link):
    """A link with a weight ``W`` drawn from N(0, 1/fan_in) once the input size is
    known (at construction, or at the first call) and a bias ``b`` starting at zero."""

    _input_size = ("in_size", slice(1, None), "past the batch axis")  # (argument, axes of x, where they are)

    def _init_params(self, n_out: int, nobias: bool, initialW: Any, initial_bias: Any, dtype: Any,
                     backend: str | None) -> None:
        self._dtype = dtype
        self._backend_name = backend
        self._initialW = initialW
        with self.init_scope():
            self.W = Variable(None, name="W")
            self.b = None
            if not nobias:
                b = get_backend(backend)
                dt = _as_dtype(b.xp, dtype)
                bias = (b.xp.zeros((n_out,), dtype=dt) if initial_bias is None else
                        _filled(b, initial_bias, (n_out,), dt, f"{type(self).__name__}: initial_bias"))
                self.b = Variable(bias, name="b")

    def _call_initializing(self, x: Any, call: Any) -> Variable:
        """``call()``, with ``W`` drawn first for input ``x`` where it is not yet; a first call
        that fails leaves ``W`` uninitialized again (a 3-D input to ``Convolution2D(None, ...)``
        drew ``W`` for its height, and every later call of the right shape failed)."""
        if self.W.data is not None:
            return call()
        return _first_call(self, ("W",), lambda: self._initialize_params(self._inferred_size(x)), call)

    def _inferred_size(self, x: Any) -> int:
        """The input size (``_input_size``) that input ``x`` gives W: the product of its sizes
        on the axes. A ValueError naming the link where one is not known (a symbolic input's
        None, dask's nan after a boolean mask: the fan-in was "unsupported operand type(s) for
        *: 'NoneType' and 'int'") or the product is 0 (a bare ZeroDivisionError)."""
        from polygrad.functions._im2col import require_array

        link = type(self).__name__
        what, axes, where = self._input_size
        data = x.data if isinstance(x, Variable) else x
        require_array(f"links.{link}", "x", data)
        shape = None if data.shape is None else tuple(data.shape)
        sizes = None if shape is None else shape[axes]
        if sizes is None or any(n is None or n != n for n in sizes):
            raise ValueError(f"polygrad.links.{link}: {what} cannot be inferred from x of shape {shape}, whose "
                             f"{'rank' if shape is None else 'size ' + where} is not known; give {what} to "
                             f"{link}(...), or an x whose size there is known (declare it: T.tensor(dtype, shape))")
        n = math.prod(sizes)
        if n < 1:
            raise ValueError(f"polygrad.links.{link}: x of shape {shape} gives {what} 0; it must be at least 1 (W's "
                             f"fan-in divides by it)")
        return n

    def _W_shape(self, n_in: int | None) -> tuple:
        """W's shape for input size ``n_in`` (None: not known yet); its fan-in is the product of all
        but its first size."""
        raise NotImplementedError

    def _uninitialized_shape(self, pname: str) -> tuple | None:
        return self._W_shape(None) if pname == "W" else None

    def _initialize_params(self, n_in: int) -> None:
        """Draw W for input size ``n_in``."""
        shape = self._W_shape(n_in)
        fan_in = math.prod(shape[1:])
        b, dt = self._creation_site()
        if self._initialW is not None:
            self._set_param("W", _filled(b, self._initialW, shape, dt, f"{type(self).__name__}: initialW"))
        else:
            self._set_param("W", b.rng().normal(shape, dtype=dt, mean=0.0, std=math.sqrt(1.0 / fan_in)))


class Linear(_Connection):
    """Fully connected layer: ``y = x @ W.T + b``, ``W`` of shape (out_size, in_size).

    ``Linear(out_size)`` or ``Linear(None, out_size)`` infers ``in_size`` at the
    first call. ``W`` is drawn from N(0, 1/in_size) with the backend's random
    numbers (``pg.seed`` makes it repeatable); ``b`` starts at zero. Sizes are
    ints (NumPy's too), ``in_size`` at least 1.

    :param dtype: dtype name or backend dtype (default float32).
    :param backend: backend name (default: the current backend).
    """

    def __init__(self, in_size: int | None, out_size: int | None = None, nobias: bool = False,
                 initialW: Any = None, initial_bias: Any = None, *, dtype: Any = "float32", backend: str | None = None) -> None:
        super().__init__()
        if out_size is None:
            in_size, out_size = None, in_size
        self.out_size = _size(out_size, "out_size", "Linear", 0)
        in_size = None if in_size is None else _size(in_size, "in_size", "Linear", 1)
        self._init_params(self.out_size, nobias, initialW, initial_bias, dtype, backend)
        if in_size is not None:
            self._initialize_params(in_size)

    def _W_shape(self, in_size: int | None) -> tuple:
        return (self.out_size, in_size)

    def forward(self, x: Any) -> Variable:
        from polygrad.functions.nn import linear

        return self._call_initializing(x, lambda: linear(x, self.W, self.b))


class Convolution2D(_Connection):
    """2-D convolution layer (:func:`polygrad.functions.convolution_2d`) of NCHW images.

    ``W`` has shape (out_channels, in_channels, kh, kw) and is drawn from
    N(0, 1/fan_in), ``fan_in = in_channels * kh * kw``, with the backend's
    random numbers; ``b`` starts at zero. ``Convolution2D(None, out, ksize)``
    or ``Convolution2D(out, ksize)`` infers ``in_channels`` at the first call.
    Sizes are ints (NumPy's too), ``in_channels`` at least 1; ``ksize``,
    ``stride`` and ``pad`` an int or a pair, checked here as
    :func:`~polygrad.functions.convolution_2d` checks its own (and kept as pairs).

    :param dtype: dtype name or backend dtype (default float32).
    :param backend: backend name (default: the current backend).
    """

    _input_size = ("in_channels", slice(1, 2), "on axis 1 (channels)")

    def __init__(self, in_channels: int | None, out_channels: int, ksize: Any = None, stride: Any = 1, pad: Any = 0,
                 nobias: bool = False, initialW: Any = None, initial_bias: Any = None, *, dtype: Any = "float32",
                 backend: str | None = None) -> None:
        from polygrad.functions._im2col import pair

        super().__init__()
        if ksize is None:
            in_channels, out_channels, ksize = None, in_channels, out_channels
        self.out_channels = _size(out_channels, "out_channels", "Convolution2D", 0)
        in_channels = None if in_channels is None else _size(in_channels, "in_channels", "Convolution2D", 1)
        self.ksize = pair(ksize, "ksize", "Convolution2D", owner="links")
        self.stride = pair(stride, "stride", "Convolution2D", owner="links")
        self.pad = pair(pad, "pad", "Convolution2D", owner="links")
        self._init_params(self.out_channels, nobias, initialW, initial_bias, dtype, backend)
        if in_channels is not None:
            self._initialize_params(in_channels)

    def _W_shape(self, in_channels: int | None) -> tuple:
        return (self.out_channels, in_channels) + self.ksize

    def forward(self, x: Any) -> Variable:
        from polygrad.functions.connection import convolution_2d

        return self._call_initializing(x, lambda: convolution_2d(x, self.W, self.b, self.stride, self.pad))


class EmbedID(Link):
    """Embedding table: integer ids to rows of ``W`` (in_size, out_size), drawn
    from N(0, 1) as in Chainer (:func:`polygrad.functions.embed_id`)."""

    def __init__(self, in_size: int, out_size: int, initialW: Any = None, ignore_label: int | None = None, *,
                 dtype: Any = "float32", backend: str | None = None) -> None:
        super().__init__()
        self.ignore_label = ignore_label
        b = get_backend(backend)
        dt = _as_dtype(b.xp, dtype)
        shape = (_size(in_size, "in_size", "EmbedID", 0), _size(out_size, "out_size", "EmbedID", 0))
        W = (_filled(b, initialW, shape, dt, "EmbedID: initialW") if initialW is not None
             else b.rng().normal(shape, dtype=dt))
        with self.init_scope():
            self.W = Variable(W, name="W")

    def forward(self, x: Any) -> Variable:
        from polygrad.functions.connection import embed_id

        return embed_id(x, self.W, ignore_label=self.ignore_label)


class BatchNormalization(Link):
    """Batch normalization with learned ``gamma`` (ones) and ``beta`` (zeros) of
    shape ``size`` (an int, NumPy's too, or a sequence of them; not None), and running
    statistics ``avg_mean`` (zeros) and ``avg_var`` (ones), which are arrays, not parameters.

    In train mode the batch statistics normalize and update the running ones
    (``decay`` as in :func:`polygrad.functions.batch_normalization`); in test
    mode (``pg.test_mode()``) the running statistics are used and left alone.

    A training call rebinds ``avg_mean`` and ``avg_var`` to new arrays rather than
    writing into them (Chainer's link updates them in place; a standard array may be
    immutable, and a lazy one must not be changed under the graphs that read it), so
    read them from the link: an array taken from it before a call keeps the old
    values. Saving, copying, moving and optimizers all read the current attributes.
    """

    def __init__(self, size: Any, decay: float = 0.9, eps: float = 2e-5, *, dtype: Any = "float32",
                 backend: str | None = None) -> None:
        from polygrad.functions.nn import hyperparameter

        super().__init__()
        self.decay = hyperparameter("BatchNormalization", "decay", decay, owner="polygrad.links")
        self.eps = hyperparameter("BatchNormalization", "eps", eps, owner="polygrad.links")
        b = get_backend(backend)
        xp = b.xp
        dt = _as_dtype(xp, dtype)
        if not xp.isdtype(dt, "real floating"):  # (its running averages were cast to it: 0.1 became 0, for good)
            raise TypeError(f"polygrad.links.BatchNormalization: dtype must be a real floating dtype to hold running "
                            f"averages, got {getattr(dt, '__name__', dt)} (backend {b.name!r})")
        shape = _as_shape(size, "BatchNormalization")
        with self.init_scope():
            self.gamma = Variable(xp.ones(shape, dtype=dt), name="gamma")
            self.beta = Variable(xp.zeros(shape, dtype=dt), name="beta")
        self.add_persistent("avg_mean", xp.zeros(shape, dtype=dt))
        self.add_persistent("avg_var", xp.ones(shape, dtype=dt))

    def forward(self, x: Any) -> Variable:
        from polygrad.core import config
        from polygrad.functions import normalization as N

        if not config.train.get():
            return N.fixed_batch_normalization(x, self.gamma, self.beta, self.avg_mean, self.avg_var, self.eps)
        y, mu, var = N.batch_statistics(x, self.gamma, self.beta, self.eps)
        self.avg_mean = N.running_average(self.avg_mean, mu, self.decay)
        self.avg_var = N.running_average(self.avg_var, var, self.decay)
        return y


class LayerNormalization(Link):
    """Layer normalization (:func:`polygrad.functions.layer_normalization`) over
    the trailing axes of shape ``size`` with ``gamma`` (ones) and ``beta``
    (zeros); ``size`` is an int (NumPy's too) or a sequence of them, and ``size=None``
    takes the shape of ``x.shape[1:]`` at the first call (one that fails takes none).
    ``eps`` defaults to 1e-6, as in Chainer's link."""

    def __init__(self, size: Any = None, eps: float = 1e-6, *, dtype: Any = "float32", backend: str | None = None) -> None:
        from polygrad.functions.nn import hyperparameter

        super().__init__()
        self.eps = hyperparameter("LayerNormalization", "eps", eps, owner="polygrad.links")
        self._dtype = dtype
        self._backend_name = backend
        with self.init_scope():
            self.gamma = Variable(None, name="gamma")
            self.beta = Variable(None, name="beta")
        if size is not None:
            self._initialize_params(_as_shape(size, "LayerNormalization"))

    def _initialize_params(self, shape: tuple[int, ...]) -> None:
        """gamma (ones) and beta (zeros) of ``shape``, each where it has no array yet (one loaded is kept)."""
        b, dt = self._creation_site()
        xp = b.xp
        for name, fill in (("gamma", xp.ones), ("beta", xp.zeros)):
            if getattr(self, name).data is None:
                self._set_param(name, fill(shape, dtype=dt))

    def _inferred_shape(self, x: Any) -> tuple[int, ...]:
        """gamma's shape for ``size=None``: x's past the batch axis, which must be there and known (a
        1-D x gave gamma of shape (), which every later (N, D) input failed against)."""
        from polygrad.functions._im2col import require_array

        data = x.data if isinstance(x, Variable) else x
        require_array("links.LayerNormalization", "x", data)
        shape = None if data.shape is None else tuple(data.shape)
        if shape is None or len(shape) < 2 or any(n is None or n != n for n in shape[1:]):
            raise ValueError(f"polygrad.links.LayerNormalization: size=None takes gamma's shape from x's axes past the "
                             f"batch axis at the first call, and x of shape {shape} has "
                             f"{'them of unknown size' if shape and len(shape) > 1 else 'none'}; give an x of shape "
                             f"(N, D) or size")
        return shape[1:]

    def forward(self, x: Any) -> Variable:
        from polygrad.functions.normalization import layer_normalization

        def call() -> Variable:
            return layer_normalization(x, self.gamma, self.beta, self.eps)

        if self.gamma.data is not None:
            return call()
        return _first_call(self, ("gamma", "beta"), lambda: self._initialize_params(self._inferred_shape(x)), call)


from polygrad.links.classifier import Classifier  # noqa: E402  (it builds on Chain)
