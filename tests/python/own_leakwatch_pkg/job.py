# SPDX-License-Identifier: Apache-2.0
"""tests/python/own_leakwatch/job.py, run from a folder whose own leakwatch
is a package (leakwatch/): this folder stays first on sys.path."""
import os
import runpy

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "own_leakwatch",
                            "job.py"), run_name="__main__")
