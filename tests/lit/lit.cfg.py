"""lit configuration: Python-built transform scripts, configured dispatch IR and ISA, checked with FileCheck.

Substitutions: %PYTHON (this interpreter), %pipelines (the CLI), FileCheck (LLVM's if on PATH, else the pip
`filecheck` package). Every test runs on a CPU-only machine: ROCm and CUDA code is compiled, never executed.
"""

import os
import shutil
import sys

import lit.formats

config.name = "amd-gemm-pipelines"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".py", ".test"]
config.excludes = ["lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.environment["PYTHONPATH"] = os.path.dirname(os.path.dirname(config.test_source_root))
# The timing model's choices (`pipelines.pick`) are cached beside the tests' outputs, not in the user's ~/.cache.
config.environment["PIPELINES_PICK_CACHE"] = os.path.join(config.test_source_root, "Output", "picks.json")
config.environment["FILECHECK_OPTS"] = "--enable-var-scope --dump-input=fail"

filecheck = shutil.which("FileCheck") or shutil.which("filecheck", path=os.path.dirname(sys.executable)) \
    or shutil.which("filecheck")
config.substitutions.append(("%PYTHON", sys.executable))
config.substitutions.append(("%pipelines", f"{sys.executable} -m pipelines"))
config.substitutions.append(("FileCheck", filecheck))
