"""``load_tokenizer`` loads a folder's tokenizer once per process and loads it again when its files
change (:func:`slime.trainer.models.load_tokenizer`)."""

from __future__ import annotations

import asyncio
import shutil
import threading

from openclaw_rl.engine.transformers_engine import TransformersEngine
from openclaw_rl.models import load_tokenizer, resolve_model_path
from slime.trainer.models import load_tokenizer as core_load_tokenizer


def test_one_tokenizer_per_folder_shared_by_every_caller():
    tok = load_tokenizer("builtin:tiny-qwen3")
    assert load_tokenizer("builtin:tiny-qwen3") is tok
    assert core_load_tokenizer(resolve_model_path("builtin:tiny-qwen3")) is tok  # the trainer's way
    got = []
    threads = [threading.Thread(target=lambda: got.append(load_tokenizer("builtin:tiny-qwen3"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(g is tok for g in got)
    engine = TransformersEngine("builtin:tiny-qwen3")
    try:
        assert engine.tokenizer is tok
    finally:
        asyncio.run(engine.aclose())


def test_a_changed_tokenizer_file_loads_it_again(tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(resolve_model_path("builtin:tiny-qwen3"), folder)
    first = load_tokenizer(folder)
    assert load_tokenizer(folder) is first and first.convert_tokens_to_ids("<|im_end|>") is not None
    template = folder / "chat_template.jinja"
    template.write_text("{% for m in messages %}[{{ m.content }}]{% endfor %}")
    second = load_tokenizer(folder)
    assert second is not first
    assert second.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False) == "[hi]"
    assert "[hi]" not in first.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)
