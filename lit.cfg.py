"""lit configuration: FileCheck tests of ccopt's tools live under test/filecheck.

Only there: the suite root is the repository, whose other .mlir files (examples, inputs of the
pytest suites such as test/backends/zoo.mlir) are not lit tests, so nothing is discovered by
default and test/filecheck/lit.local.cfg turns discovery on. `lit test/` and
`lit test/filecheck` run the same tests.
"""

import os

import lit.formats

config.name = "ccopt"  # noqa: F821 - lit injects `config`
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821
config.suffixes = []  # noqa: F821 - see test/filecheck/lit.local.cfg
config.excludes = ["inputs"]  # noqa: F821
config.environment["PATH"] = os.environ.get("PATH", "")  # noqa: F821
config.environment["PYTHONHASHSEED"] = "0"  # noqa: F821
