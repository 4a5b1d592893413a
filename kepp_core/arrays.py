"""Arrays from what a caller passes: numpy arrays, torch tensors (on any device, with or without a
gradient) or nested lists, without importing torch (a tensor is recognised by its ``detach``).

>>> as_numpy([[1, 2]]).shape, float_array([0.5, 1], "scores").dtype
((1, 2), dtype('float64'))
"""

from __future__ import annotations

import numpy as np

from kepp_core.errors import KeppError

__all__ = ["as_numpy", "float_array"]


def as_numpy(x) -> np.ndarray:
    """``x`` as a numpy array: a torch tensor is detached and copied to the CPU, anything else goes
    through ``np.asarray``."""
    return np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x)


def float_array(x, name: str) -> np.ndarray:
    """``x`` (numpy, torch or nested lists) as a float64 array; NaN or +inf is a KeppError naming ``name``."""
    try:
        arr = np.asarray(as_numpy(x), dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise KeppError(f"{name} must be an array of numbers ({e})") from None
    if np.isnan(arr).any() or np.isposinf(arr).any():
        raise KeppError(f"{name} contains NaN or +inf values (expected finite scores)")
    return arr
