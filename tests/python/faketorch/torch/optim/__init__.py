# SPDX-License-Identifier: Apache-2.0
from .optimizer import Optimizer  # noqa: F401
