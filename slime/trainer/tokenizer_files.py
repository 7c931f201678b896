"""A tokenizer's ``save_pretrained`` files, written once per trainer and copied into every folder.

Every full-model checkpoint and every weight export (one per published version, so one per step)
carries the tokenizer, so that the folder serves and resumes on its own. Writing it anew each
time re-serialises the whole vocabulary: ~0.22 CPU-s for the Qwen tokenizer (151,936 tokens,
~11 MB of ``tokenizer.json``), against ~0.03 s for the tiny test model's weights. The tokenizer
does not change during a run, so :class:`SavedTokenizer` writes its files once, into a private
temporary folder removed with the object (or at exit), and copies them (~8 ms).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any

__all__ = ["SavedTokenizer"]


class SavedTokenizer:
    """Stands in for a tokenizer where only ``save_pretrained(folder)`` is called
    (:func:`slime.trainer.checkpoint.save_checkpoint`, :meth:`BackendIOMixin.export_weights`).

    Args:
        tokenizer: anything with ``save_pretrained(folder)`` (a transformers tokenizer or processor).

    The first :meth:`save_pretrained` writes the tokenizer's files into a private folder; every
    call (the first included) copies those files into ``folder``. Thread-safe.
    """

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self._lock = threading.Lock()
        self._files: Path | None = None

    def save_pretrained(self, folder: str | os.PathLike) -> tuple[str, ...]:
        """Copy the tokenizer's files into ``folder`` (created if missing); returns the paths
        written, as ``save_pretrained`` does.

        Raises:
            OSError: from the filesystem; whatever the tokenizer's own ``save_pretrained`` raises
                on the first call (nothing is cached then, so the next call tries again).
        """
        with self._lock:
            if self._files is None:
                files = tempfile.mkdtemp(prefix="saved-tokenizer-")
                try:
                    self.tokenizer.save_pretrained(files)
                except BaseException:
                    shutil.rmtree(files, ignore_errors=True)
                    raise
                weakref.finalize(self, shutil.rmtree, files, True)
                self._files = Path(files)
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copytree(self._files, out, dirs_exist_ok=True)
        return tuple(str(out / p.relative_to(self._files)) for p in sorted(self._files.rglob("*")) if p.is_file())
