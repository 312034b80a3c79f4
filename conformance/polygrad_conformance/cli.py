"""``polygrad-conformance BACKEND [pytest options]``: run the suite against BACKEND."""

from __future__ import annotations

import sys

USAGE = """usage: polygrad-conformance BACKEND [PYTEST OPTIONS...]

Run the polygrad conformance suite against the installed backend BACKEND
(e.g. numpy, dask, cupy). Extra options go to pytest, e.g. -x, -k grad,
--polygrad-plugin MODULE[:ATTR] (register an uninstalled plugin by hand),
--polygrad-xfails PATH, --polygrad-depth (the op table's in-depth cases too).
Exit status: pytest's (0 when the backend conforms).
Same as: pytest --pyargs polygrad_conformance --polygrad-backend BACKEND
"""


def main(argv: list[str] | None = None) -> int:
    from pathlib import Path

    import pytest

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0].startswith("-"):
        print(USAGE, file=sys.stderr if args and args[0].startswith("-") and args[0] not in ("-h", "--help") else sys.stdout)
        return 0 if args and args[0] in ("-h", "--help") else 2
    backend, rest = args[0], args[1:]
    ini = Path(__file__).with_name("conformance.ini")
    # Own ini and no conftest.py: the project it is run from cannot change the suite.
    return int(pytest.main(["-c", str(ini), "--rootdir", str(ini.parent), "--noconftest", "-p", "no:cacheprovider",
                            "--pyargs", "polygrad_conformance", "--polygrad-backend", backend, *rest]))
