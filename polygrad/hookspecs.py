"""The backend contract: every hook a polygrad backend plugin may implement,
and the value types the hooks exchange (:class:`BackendInfo`,
:class:`RandomGenerator`).

A backend plugin is a module (or any object) with functions marked by
``polygrad.hookimpl``, named by an entry point in the group ``polygrad``::

    [project.entry-points.polygrad]
    numpy = "polygrad_numpy"

``polygrad_backend_info`` declares the plugin's backend(s). Every other hook
is ``firstresult`` and is asked only of the plugin(s) that declared the
backend, then of polygrad's own defaults (``polygrad._defaults``, registered
like any plugin with ``trylast``): a plugin overrides a default by answering,
and answers only for its own backends without checking any name. A hookimpl
takes only the arguments it needs (``def polygrad_array_namespace():``). The
``backend`` argument, the backend's name, is there for a plugin that provides
several backends and must tell them apart; hooks that take it and answer
``None`` for names that are not theirs (the form of earlier versions) keep
working. polygrad calls each hook once per backend and caches the answer, so
no hook sits on the per-op path.

Rules a plugin keeps:

* Importing the plugin module must not import its array library; import it
  inside the hooks (``import polygrad`` must stay free of numpy, cupy, dask).
* Never change polygrad's semantics: faster kernels must compute what the
  generic kernel computes (the conformance suite checks both).

What polygrad does with a plugin that breaks them (each is a
:class:`PluginWarning` naming the plugin, and never changes another backend):

* Two plugins declaring one backend name: one of them provides it, the others'
  declarations are ignored. A plugin registered by hand (``pg.register_plugin``)
  wins over installed ones (the latest registered first); among installed ones,
  the plugin whose entry point has the backend's name wins, else the first by
  entry-point name. Two installed distributions with one entry-point name: the
  first by distribution name is loaded, the other skipped.
* A hook that raises or answers something of the wrong type: for
  ``polygrad_check_usable``, ``polygrad_array_types`` (an empty claim too,
  checked when the namespace loads) and ``polygrad_random_generator`` (an
  object without ``normal()`` and ``uniform()``) the backend is reported
  unusable, with the reason; for ``polygrad_kernels`` the backend runs
  without faster kernels.
* Two backends claiming one array type: see :func:`polygrad_array_types`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Protocol

import pluggy

if TYPE_CHECKING:  # pragma: no cover
    from types import ModuleType
    from typing import ContextManager

hookspec = pluggy.HookspecMarker("polygrad")
#: The marker of a polygrad hook implementation (also ``pg.hookimpl``).
hookimpl = pluggy.HookimplMarker("polygrad")


# ---------------------------------------------------------------------------
# Values the hooks exchange
# ---------------------------------------------------------------------------


class PluginWarning(RuntimeWarning):
    """A plugin broke the contract (a name or array type claimed twice, a hook that
    raised or answered garbage); the message names the plugin and what polygrad did.

    Filter it like any warning:
    ``warnings.filterwarnings("ignore", category=PluginWarning)``.
    """


@dataclasses.dataclass(frozen=True)
class BackendInfo:
    """Static description of a backend, given by its plugin without importing anything.

    :param name: the name users pass to ``pg.set_backend``; one backend per
        name (see "Two plugins declaring one backend name" above).
    :param module: the array library's own top-level module (``"numpy"``,
        ``"jax"``), imported only when the backend is used (by
        ``polygrad_array_namespace``); its presence in ``sys.modules`` tells
        polygrad whether arrays of this backend can exist yet, and without a
        ``polygrad_check_usable`` hook the backend is usable only where
        ``importlib.util.find_spec`` finds it. Not the plugin's module: the
        conformance suite checks that loading the plugin leaves it unimported,
        so a library shipped with its plugin is a top-level package of its own.
    :param device: ``"cpu"`` or ``"gpu"``; user Functions' ``forward_cpu`` /
        ``forward_gpu`` are chosen by it, and TimerHook synchronizes a device
        that is not the CPU.
    :param lazy: arrays are computed only on request (dask): ``pg.compute``
        goes through ``polygrad_materialize``, optimizers through
        ``polygrad_persist``, and compiled functions through both at every
        call. Implement those and ``polygrad_forbid_compute``, and preferably
        ``polygrad_check_lazily``.
    :param inplace: arrays support ``x[key] = v`` writes. With False (jax),
        polygrad never writes into an array of the backend: in-place ops
        rebind the Variable to a new array, and the default scatter-add builds
        its result functionally.
    :param float64, complex: the dtypes exist (``float64`` and ``complex128``);
        the conformance suite skips what needs one the backend lacks.
    :param data_dependent_shapes: sizes that depend on values (boolean masks,
        ``nonzero``, ``unique_*``) are known once the op has run. False (dask):
        they stay unknown (``None`` in ``shape``, as the standard says; dask
        writes ``nan``), and polygrad refuses ``nonzero``, ``unique_*``,
        ``repeat`` with an array of repeats and the backward of a boolean mask;
        ``x[mask]`` runs forward. A namespace function given a shape with an
        unknown size (``broadcast_to`` in sum's backward) should raise a clear
        error naming it.
    :param priority: the usable backend with the highest priority is the
        default (numpy 100, cupy 50, dask 10); give a negative one to be used
        only when asked for by name.

    No field declares the default floating dtype: it is the namespace's, as
    the standard says (``xp.__array_namespace_info__().default_dtypes()``);
    ``pg.asarray([1.0])`` calls the namespace's ``asarray``, which uses it.
    """

    name: str
    module: str
    device: str = "cpu"
    lazy: bool = False
    inplace: bool = True
    float64: bool = True
    complex: bool = True
    data_dependent_shapes: bool = True
    priority: int = 0


class RandomGenerator(Protocol):
    """What ``polygrad_random_generator`` returns: seeded random arrays of one backend.

    ``shape`` is a tuple of ints; ``dtype`` is a floating dtype object of the
    backend's namespace (``xp.float32``, never a string); the result is an array
    of this backend with exactly that shape and dtype. Successive calls give new
    numbers; a generator made with the same seed gives the same ones.
    """

    def normal(self, shape: tuple[int, ...], *, dtype: Any, mean: float = 0.0, std: float = 1.0) -> Any: ...

    def uniform(self, shape: tuple[int, ...], *, dtype: Any, low: float = 0.0, high: float = 1.0) -> Any: ...


# ---------------------------------------------------------------------------
# Discovery: static facts, answered without importing the array library
# ---------------------------------------------------------------------------


@hookspec
def polygrad_backend_info() -> "BackendInfo | list[BackendInfo]":
    """Describe the backend(s) this plugin provides.

    Called on every registered plugin; the answers are collected. Must not
    import the array library: the answer is what ``pg.backends()`` lists before
    anything is loaded.

    :return: a :class:`BackendInfo` (name, library module name, device
        kind, laziness, capabilities, default priority), or a list of them.
        The plugin's other hooks are asked about these backends only.
    """


# ---------------------------------------------------------------------------
# Loading: called once, the first time a backend is used
# ---------------------------------------------------------------------------


@hookspec(firstresult=True)
def polygrad_check_usable(backend: str) -> "tuple[bool, str] | None":
    """Say whether ``backend`` can run here, cheaply and without allocating.

    Stops at the first non-None result.

    :param backend: the backend's name.
    :return: ``(True, "")`` when usable, ``(False, reason)`` otherwise, for
        example ``(False, "cupy is installed but no CUDA driver was found")``.
        Without this hook, polygrad's default says usable where
        ``importlib.util.find_spec`` finds ``BackendInfo.module`` (nothing is
        imported). Either way the backend also needs its namespace to load: a
        namespace hook that raises makes it unusable, with that error as the
        reason, and it is never chosen as the default. An answer that is not
        a ``(bool, str)`` pair, or an exception, makes the backend unusable,
        with a :class:`PluginWarning` naming the plugin.
    """


@hookspec(firstresult=True)
def polygrad_array_namespace(backend: str) -> "ModuleType | None":
    """Import the array library and return its Array API namespace (``xp``).

    Stops at the first non-None result. Typically an ``array_api_compat``
    wrapper (``array_api_compat.numpy``) or the library itself where it is
    already compliant. polygrad calls the functions of the standard's version
    2024.12 (with its ``linalg`` and ``fft`` extensions), and ``isin`` (2025.12)
    for ``pg.isin`` where the namespace has it. Its arrays' operators return ``NotImplemented`` for an
    operand they do not know, so that ``array + variable`` reaches the Variable.

    :param backend: the backend's name.
    """


@hookspec(firstresult=True)
def polygrad_array_types(backend: str) -> "tuple[type, ...] | None":
    """Return the array types this backend owns, as a tuple of classes.

    Stops at the first non-None result. polygrad caches ``type(array) ->
    backend``, so an op never searches. Only asked once the library named by
    ``BackendInfo.module`` has been imported by someone.

    A type claims its subclasses too (``issubclass``). When several backends
    claim an array's type, the most specific claim wins (the type itself
    before its base classes), so a backend may claim a subclass of another
    backend's array type. Equal claims are a conflict, reported once the type
    is first met with a :class:`PluginWarning` naming both backends and
    plugins, and resolved in this order: a plugin registered by hand (the
    latest first), then the backend of higher ``priority``, then the first
    by entry-point name. Anything but a tuple (or list) of classes, or an
    exception, makes the backend unusable, with a :class:`PluginWarning`; so
    does a claim of no type (None or ``()``), checked when the backend's
    namespace loads (its arrays would belong to no backend, or another's).

    :param backend: the backend's name.
    """


# ---------------------------------------------------------------------------
# What the Array API standard lacks
# ---------------------------------------------------------------------------


@hookspec(firstresult=True)
def polygrad_random_generator(backend: str, seed: "int | None") -> "RandomGenerator | None":
    """Return a random generator for ``backend`` seeded with ``seed``.

    Stops at the first non-None result. The standard has no random numbers;
    initializers and dropout use this. The object implements
    :class:`RandomGenerator`: ``normal(shape, *, dtype,
    mean, std)`` and ``uniform(shape, *, dtype, low, high)``, where ``dtype``
    is a dtype object of the backend's namespace, returning arrays of this
    backend. The same seed gives the same numbers; successive draws differ.
    An answer without callable ``normal`` and ``uniform`` makes the backend
    unusable, with a :class:`PluginWarning`.

    :param backend: the backend's name.
    :param seed: an integer seed, or None for fresh entropy.
    """


@hookspec(firstresult=True)
def polygrad_scatter_add(backend: str) -> "Callable[[Any, Any, Any], Any] | None":
    """Return ``scatter_add(x, key, values)``: a copy of ``x`` with ``values``
    added at ``x[key]``, repeated indices summed; ``x`` itself is left as it is.

    Stops at the first non-None result. Indexing backward needs it; ``key`` is
    a basic key (ints, slices, ``...``) or a tuple of integer arrays on the
    leading axes, and ``values`` broadcasts to ``x[key]``'s shape. Optional:
    without it, polygrad's default answers with a slower scatter-add written
    with the standard only, which never writes into an array of a backend
    whose ``BackendInfo.inplace`` is False.

    :param backend: the backend's name.
    """


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------


@hookspec(firstresult=True)
def polygrad_save_npz(backend: str, file: Any, arrays: "dict[str, Any]", compressed: bool) -> "bool | None":
    """Write ``arrays`` (of this backend) to ``file`` in NumPy's ``.npz`` format.

    Stops at the first non-None result; return True once written. The numpy
    plugin implements it; ``polygrad.serializers`` uses it.

    :param backend: the backend's name.
    :param file: a path or a binary file object.
    :param arrays: key -> array.
    :param compressed: compress the archive.
    """


@hookspec(firstresult=True)
def polygrad_load_npz(backend: str, file: Any) -> "Any | None":
    """Open a ``.npz`` file: a context manager giving a mapping with ``.files``
    and ``[key]`` -> array of this backend. With ``file=None``, answer any
    non-None value to say the backend can read ``.npz`` files.

    Stops at the first non-None result.

    :param backend: the backend's name.
    :param file: a path or a binary file object.
    """


@hookspec(firstresult=True)
def polygrad_owns_memory(backend: str) -> "Callable[[Any], bool] | None":
    """Return a predicate: does an array own writable memory (it is no view)?

    Stops at the first non-None result. Backward uses it to hand gradients to
    the user without a defensive copy; without it (polygrad's default says
    False for every array), leaf gradients the backward pass did not allocate
    itself are copied.

    :param backend: the backend's name.
    """


@hookspec(firstresult=True)
def polygrad_kernels(backend: str) -> "dict[str, Callable[..., Any]] | None":
    """Return faster forward kernels for named ops: ``{op_name: kernel}``.

    Stops at the first non-None result. Optional, for speed only: every op
    has a generic kernel written with the standard. A kernel takes the op's
    arguments (arrays and parameters, as the op row's kernel does) without
    ``xp``, and must compute exactly what the generic kernel computes (the
    conformance suite compares both). An answer that is not a dict of
    callables, or an exception, is a :class:`PluginWarning`; the backend then
    runs the generic kernels.

    :param backend: the backend's name.
    """


# ---------------------------------------------------------------------------
# Execution: laziness, devices, memory
# ---------------------------------------------------------------------------


@hookspec(firstresult=True)
def polygrad_materialize(backend: str, arrays: "tuple[Any, ...]") -> "tuple[Any, ...] | None":
    """Compute several lazy arrays in one pass and return concrete arrays.

    Stops at the first non-None result. Eager backends need not implement it
    (polygrad's default returns the arrays unchanged).

    The results are what ``pg.compute`` returns: concrete arrays of an eager
    library (numpy, or the library of the chunks: cupy), never arrays of this
    backend, even computed ones; the conformance suite fails a result whose
    type the backend claims. A library whose arrays keep one type once computed
    returns them converted, as numpy arrays for example. Compiled functions
    call it at every call on what :func:`polygrad_persist` returned, so
    materializing a persisted array must be cheap (no recomputation).

    :param backend: the backend's name.
    :param arrays: arrays of this backend.
    """


@hookspec(firstresult=True)
def polygrad_persist(backend: str, arrays: "tuple[Any, ...]") -> "tuple[Any, ...] | None":
    """Compute several lazy arrays in one pass and keep the results in (distributed)
    memory as lazy arrays of this backend (``dask.persist``).

    Stops at the first non-None result. Eager backends need not implement it
    (polygrad's default returns the arrays unchanged). Optimizers call it once
    per update; compiled functions at every call, on all their outputs and
    updates together, and then :func:`polygrad_materialize` on the persisted
    outputs. A library without dask's notion of persisting returns lazy arrays
    whose graph is the computed value.

    :param backend: the backend's name.
    :param arrays: arrays of this backend.
    """


@hookspec(firstresult=True)
def polygrad_synchronize(backend: str) -> "bool | None":
    """Block until all work queued on ``backend`` has finished.

    Stops at the first non-None result; return True once done. TimerHook calls
    it before reading the clock. Synchronous backends need not implement it.

    :param backend: the backend's name.
    """


@hookspec(firstresult=True)
def polygrad_fuse_elementwise(backend: str, nodes: tuple, inputs: tuple, outputs: tuple) -> "Callable[..., tuple] | None":
    """Compile a subgraph of elementwise kernels of a compiled function into one kernel.

    Stops at the first non-None result. Optional, for speed only: compiled
    functions (``pg.function``) offer each maximal group of elementwise kernels
    of their program (forward and backward together, two kernels or more, no
    random draws) and run a declined group node by node. Decline (answer None)
    whatever the backend cannot compute exactly as the nodes would, or where
    fusing would not pay (small arrays). The result must agree with the nodes'
    to the dtype's rounding, with the dtypes the nodes give.

    :param backend: the backend's name.
    :param nodes: the group, each node after the nodes it reads; each a named tuple
        ``(op, args, params, shape, dtype, kernel)`` (:class:`polygrad.extend.FusedNode`):
        the row's name (``"add"``, ``"exp"``, ``"where"``, ``"astype"``, ``"relu"`` ...),
        its arguments, each ``("input", i)``, ``("node", j)`` (the result of node
        ``j``) or ``("scalar", value)`` (a Python bool, int or float, a weak scalar
        as the standard types it), the row's keyword parameters, the shape and
        dtype of its result, and the row's kernel on this backend
        (``kernel(*args, **params)``, for the nodes a backend computes one by one;
        ``polygrad.extend.row(op).kernel(other_backend)`` is the row's kernel on another
        backend, as a lazy backend running numpy kernels on its blocks wants).
    :param inputs: ``(shape, dtype, donated)`` of each array the kernel takes, in
        order. ``donated`` is True for an intermediate the program made and reads
        nowhere else: the kernel may write into it (as an output's buffer, say);
        never for the caller's arrays, shared values or constants.
    :param outputs: indices of the nodes whose results the kernel returns, in order.
    :return: ``kernel(*arrays) -> tuple`` of one array per output, each new or a
        donated input (never another input or a view of one: the program may write
        into it), or None.
    """


@hookspec(firstresult=True)
def polygrad_forbid_compute(backend: str) -> "ContextManager[Any] | None":
    """Return a context manager inside which computing any array of ``backend``
    raises an error (for example a dask scheduler that refuses every graph).

    Stops at the first non-None result. Lazy backends must implement it: the
    conformance suite runs forward and backward inside it to prove that no op
    computes before ``pg.compute`` is asked to, and fails a lazy backend
    without it or whose guard lets a computation through. Eager backends need
    not.

    :param backend: the backend's name.
    """


@hookspec(firstresult=True)
def polygrad_check_lazily(backend: str, array: Any, check: "Callable[[Any], None]") -> Any:
    """Attach a check of values to a lazy array: return an array of the same values,
    shape and dtype whose computation (and that of anything computed from it) first
    calls ``check(chunk)`` on each computed chunk, a concrete array of the chunk's
    library (NumPy, CuPy, ...); ``check`` raises ValueError on a bad value.

    Stops at the first non-None result. Optional but recommended for lazy backends:
    polygrad checks label values, embedding ids and repeated setitem positions where
    they enter, which on a lazy backend would mean computing them; with this hook the
    check runs where the loss or gradient is computed, and a bad value raises there
    instead of giving a wrong result. A lazy backend without it has such values
    checked only in debug mode, and the conformance suite skips its test of this
    hook, saying so. A library without chunks passes the whole array as one chunk.
    Eager backends need not implement it (their values are checked at once).

    :param backend: the backend's name.
    :param array: an array of this backend.
    :param check: a function of one concrete chunk; it may be pickled and run on
        another process (dask.distributed workers).
    """


@hookspec(firstresult=True)
def polygrad_memory_stats(backend: str) -> "dict[str, int] | None":
    """Return memory use in bytes, e.g. ``{"used": ..., "total": ...}``.

    Stops at the first non-None result; None when the backend cannot tell.

    :param backend: the backend's name.
    """
