"""Runs one client library's cases in this process and prints the results as JSON.

    python -m clients.run scipy        (with tests/ on PYTHONPATH)

scipy reads SCIPY_ARRAY_API once, when it is first imported, so each library's cases
run in a fresh process with it set; the test module starts one such process per library.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import warnings

os.environ["SCIPY_ARRAY_API"] = "1"  # before anything imports scipy


def main(library: str) -> dict:
    table = importlib.import_module(f"clients.cases_{library}")
    missing = [m for m in table.REQUIRES if importlib.util.find_spec(m) is None]
    if missing:
        return {"missing": f"{', '.join(missing)} not installed"}
    warnings.simplefilter("ignore")  # clients warn about deprecations and float edge cases; outcomes are checked
    from clients.harness import run_all

    if hasattr(table, "setup"):
        table.setup()
    return run_all(table.CASES)


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
