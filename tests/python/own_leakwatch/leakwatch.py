# SPDX-License-Identifier: Apache-2.0
"""The job's own module named leakwatch, in the job's folder (first on its
sys.path): tests/python/own_leakwatch/job.py must import this one, not
leakwatch's package, under the preload."""
JOB_MARKER = "the job's own leakwatch.py"
