#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The GPU check (tests/gpu/check.py): from a build made beforehand (build/
# carried with the working tree), never builds, never reaches the network.
# Results under $OUT when set. docs/gpu-results.md says how to run it.
#
#   tests/gpu/run.sh [--dry-run] [--budget S] [--parts a,b,...]
#   PYTHON=python3.12 tests/gpu/run.sh
cd "$(dirname "$0")/../.." || exit 2
exec "${PYTHON:-python3}" tests/gpu/check.py "$@"
