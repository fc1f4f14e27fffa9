# SPDX-License-Identifier: Apache-2.0
"""The job's own package named leakwatch, in the job's folder (first on its
sys.path): tests/python/own_leakwatch_pkg/job.py must import this one."""
JOB_MARKER = "the job's own leakwatch package"
