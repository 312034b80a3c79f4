"""The polygrad conformance suite: what every backend plugin must pass.

Run it against an installed backend::

    polygrad-conformance dask
    pytest --pyargs polygrad_conformance --polygrad-backend dask

It checks discovery (the entry point loads, BackendInfo is valid and says what
the namespace declares, no other backend claims its arrays, a broken plugin is
one clear failure), array creation in the namespace's default dtypes and
``pg.to_backend`` round trips, every op of ``polygrad.ops.REGISTRY`` (forward
against the backend's own namespace, gradients checked numerically, second
derivatives; result and gradient dtypes at every floating dtype the namespace
declares; the plugin's kernels against the generic ones on every call forward
and backward make), broadcasting, reductions, indexing backward with repeated
indices, function hooks, ``no_backprop_mode``, in-place writes, random streams
(seeded, moving on at every draw, repeated by ``pg.seed``) and, for lazy
backends, that nothing computes before ``pg.compute``. Known failures live in
``conformance-xfails.txt`` beside the plugin (ids as the suite prints them,
with conditions); a per-area summary ends each run; see
``conformance/README.md``.
"""

__version__ = "0.1.0"
