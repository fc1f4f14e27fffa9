# SPDX-License-Identifier: Apache-2.0
from . import reductions  # noqa: F401
