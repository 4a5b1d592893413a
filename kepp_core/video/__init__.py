"""Video decoding (decord), clips and thumbnails, feature encoders and the feature cache."""

from kepp_core.video.decode import *  # noqa: F403
from kepp_core.video.encoders import *  # noqa: F403
from kepp_core.video.encode import *  # noqa: F403
from kepp_core.video.write import *  # noqa: F403
from kepp_core.video import decode, encode, encoders, write

# each part's __all__ lists the names it shows through this package (written once, beside their code)
__all__ = [
    *decode.__all__,
    *encoders.__all__,
    *encode.__all__,
    *write.__all__,
]
