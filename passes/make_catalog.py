"""Write passes/catalog.py: every built-in pass's summary and options, read from the classes.

`ccopt --help` lists passes and options from that file, so that asking for help imports no pass
module (and their dialects); the test suite checks that the file matches the classes.

    python -m ccopt.passes.make_catalog            # rewrite passes/catalog.py
    python -m ccopt.passes.make_catalog --check    # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

CATALOG_FILE = Path(__file__).resolve().parent / "catalog.py"

HEADER = '''"""Every built-in pass's summary and options, for `ccopt --help` (no pass module imported).

Generated from the pass classes by `python -m ccopt.passes.make_catalog`: do not edit.
"""

from ccopt.passes.options import OptionInfo, PassInfo

# fmt: off
CATALOG: dict[str, PassInfo] = {
'''


def render() -> str:
    from ccopt.passes import BUILTIN_PASSES, describe

    lines = [HEADER]
    for name, load in BUILTIN_PASSES.items():
        info = describe(load())
        options = "".join(f"            {option!r},\n" for option in info.options)
        options = f"(\n{options}        )" if options else "()"
        lines.append(
            f"    {name!r}: PassInfo(\n        {info.summary!r},\n        {options},\n    ),\n"
        )
    lines.append("}\n")
    return "".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if catalog.py is out of date")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not CATALOG_FILE.exists() or CATALOG_FILE.read_text() != text:
            print(
                "passes/catalog.py is out of date: run python -m ccopt.passes.make_catalog",
                file=sys.stderr,
            )
            return 1
        return 0
    CATALOG_FILE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
