# SPDX-License-Identifier: Apache-2.0
from .grad_scaler import GradScaler  # noqa: F401
