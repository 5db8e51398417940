"""Record-key constants of Hudi's key generators (``KeyGenUtils``), shared by the writer and the reader.

A complex key is ``f1:v1,f2:v2``; a null value is written ``__null__`` and an empty one ``__empty__``
(``KeyGenUtils.NULL_RECORDKEY_PLACEHOLDER`` / ``EMPTY_RECORDKEY_PLACEHOLDER``).
"""

from __future__ import annotations

from typing import Final

__all__ = ["EMPTY_RECORDKEY_PLACEHOLDER", "NULL_RECORDKEY_PLACEHOLDER"]

NULL_RECORDKEY_PLACEHOLDER: Final = "__null__"
EMPTY_RECORDKEY_PLACEHOLDER: Final = "__empty__"
