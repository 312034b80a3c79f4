"""``polygrad-conformance [BACKEND] [pytest options]``: run the suite against BACKEND."""

from __future__ import annotations

import os
import sys

USAGE = """usage: polygrad-conformance [BACKEND] [PYTEST OPTIONS...]

Run the polygrad conformance suite against the installed backend BACKEND
(e.g. numpy, dask, cupy); without BACKEND, against POLYGRAD_BACKEND or the
--polygrad-backend NAME among the options. Extra options go to pytest, e.g. -x,
-k grad, --polygrad-plugin MODULE[:ATTR] (register an uninstalled plugin by
hand), --polygrad-xfails PATH, --polygrad-depth (the op table's in-depth cases
too). Exit status: pytest's (0 when the backend conforms).
Same as: pytest --pyargs polygrad_conformance --polygrad-backend BACKEND
"""


def main(argv: list[str] | None = None) -> int:
    from pathlib import Path

    import pytest

    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if args and not args[0].startswith("-"):
        args = ["--polygrad-backend", *args]
    elif not (os.environ.get("POLYGRAD_BACKEND") or any(a.split("=")[0] == "--polygrad-backend" for a in args)):
        print(USAGE, file=sys.stderr)
        return 2
    # (else the suite's pytest plugin reads the backend, from the option or the variable, as on the pytest route)
    ini = Path(__file__).with_name("conformance.ini")
    # Own ini and no conftest.py: the project it is run from cannot change the suite.
    return int(pytest.main(["-c", str(ini), "--rootdir", str(ini.parent), "--noconftest", "-p", "no:cacheprovider",
                            "--pyargs", "polygrad_conformance", *args]))
