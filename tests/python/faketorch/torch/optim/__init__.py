# SPDX-License-Identifier: Apache-2.0
from .optimizer import SGD, Adam, Optimizer  # noqa: F401
