"""A LoRA run's checkpoint used elsewhere: ``openclaw-rl serve --model-path <ckpt>/checkpoint-latest``
serves it, ``openclaw-rl export-model --merge OUT`` writes a merged Hugging Face folder that plain
transformers loads, with the same logits as base + adapter (peft) and the same greedy reply as
the server."""

from __future__ import annotations

import subprocess
import sys

import openai
import pytest
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer

from openclaw_rl.models import load_model, load_tokenizer, resolve_model_path
from slime.trainer.checkpoint import TrainerState, save_checkpoint
from tests.support.server import running_server

BASE = "builtin:smollm2-135m"  # a real model: its greedy choices are not near-ties
MESSAGES = [{"role": "user", "content": "Name three colours of the rainbow."}]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "openclaw_rl.cli", *args], capture_output=True, text=True, timeout=600)


def _lora_checkpoint(save_dir):
    """A LoRA checkpoint written by the trainer's checkpoint writer, with a non-zero adapter."""
    torch.manual_seed(0)
    model = get_peft_model(load_model(BASE), LoraConfig(r=8, lora_alpha=2, init_lora_weights=False,
                                                        target_modules=["q_proj", "v_proj"]))
    save_checkpoint(save_dir, TrainerState(step=1, weight_version=1), model, tokenizer=load_tokenizer(BASE))
    return save_dir / "checkpoint-latest"


@pytest.mark.slow
def test_lora_checkpoint_served_and_exported_merged(tmp_path):
    ckpt = _lora_checkpoint(tmp_path / "ckpt")
    assert (ckpt / "adapter_config.json").is_file() and not (ckpt / "config.json").exists()
    out = tmp_path / "merged"
    r = _cli("export-model", "--model-path", str(ckpt), "--merge", str(out))
    assert r.returncode == 0, r.stderr
    # bad input: one line, exit 2
    for args in (("--model-path", str(ckpt), "--merge", str(out)),  # not empty
                 ("--model-path", str(tmp_path / "nope"), "--merge", str(tmp_path / "o2")),
                 ("--model-path", str(tmp_path), "--merge", str(tmp_path / "o3"))):
        bad = _cli("export-model", *args)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr

    tok = AutoTokenizer.from_pretrained(out)
    merged = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    ids = tok.apply_chat_template(MESSAGES, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        unmerged = PeftModel.from_pretrained(load_model(BASE), ckpt).eval()
        logits_merged = merged(**ids).logits
        assert torch.allclose(logits_merged, unmerged(**ids).logits, atol=1e-3)
        assert not torch.allclose(logits_merged, load_model(BASE)(**ids).logits, atol=1e-2)  # the adapter counts
        greedy = merged.generate(**ids, max_new_tokens=12, do_sample=False)
    expected = tok.decode(greedy[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)

    assert resolve_model_path(ckpt).is_dir()  # the checkpoint resolves to its merged folder
    with running_server(str(ckpt), tmp_path / "rl_buffer") as server:
        c = openai.OpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0, timeout=300)
        reply = c.chat.completions.create(model="checkpoint-latest", messages=MESSAGES, max_tokens=12, temperature=0)
    assert reply.choices[0].message.content == expected.strip() or reply.choices[0].message.content == expected
