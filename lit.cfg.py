"""lit configuration: FileCheck tests of ccopt's tools live under test/filecheck."""

import os

import lit.formats

config.name = "ccopt"  # noqa: F821 - lit injects `config`
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821
config.suffixes = [".mlir"]  # noqa: F821
config.excludes = ["inputs"]  # noqa: F821
config.environment["PATH"] = os.environ.get("PATH", "")  # noqa: F821
config.environment["PYTHONHASHSEED"] = "0"  # noqa: F821
