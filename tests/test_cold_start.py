"""The SFT cold start's layout: a demonstration becomes the ids the server records for it."""

from __future__ import annotations

import json

import torch

from openclaw_rl.agentic.cold_start import Demo, demo_ids, sft, token_margins
from openclaw_rl.envs.terminal.env import TOOLS
from openclaw_rl.models import load_tokenizer, resolve_model_path
from openclaw_rl.server.prompt import render_text, tokenize

CALL = {"name": "shell_exec", "arguments": {"command": "touch done"}}


def _demo() -> Demo:
    msgs = [{"role": "user", "content": "Create an empty file named `done`."},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c0", "type": "function", "function": {
                "name": CALL["name"], "arguments": json.dumps(CALL["arguments"])}}]},
            {"role": "tool", "tool_call_id": "c0", "content": "[exit code 0]"},
            {"role": "assistant", "content": "Done."}]
    return Demo(messages=msgs, tools=TOOLS, replies=["<tool_call>\n" + json.dumps(CALL) + "\n</tool_call>", "Done."])


def test_demo_ids_are_the_rendered_episode_with_loss_on_the_replies_only():
    tok = load_tokenizer("builtin:tiny-qwen3")
    demo = _demo()
    item = demo_ids(tok, demo)
    # the Qwen template renders this call as the model writes it, so the continuation layout
    # equals the full rendering up to the last reply's end of turn
    full = tokenize(tok, render_text(tok, demo.messages, TOOLS, add_generation_prompt=False))
    assert item.ids == full[:len(item.ids)] and full[len(item.ids):] == tokenize(tok, "\n")
    first = tokenize(tok, render_text(tok, demo.messages[:1], TOOLS, add_generation_prompt=True))
    assert item.ids[:item.prompt_len] == first and set(item.loss_mask[:item.prompt_len]) == {0}
    trained = tok.decode([i for i, m in zip(item.ids, item.loss_mask) if m])
    assert trained == demo.replies[0] + "<|im_end|>" + "Done.<|im_end|>"


def test_sft_raises_the_probability_of_the_demonstrated_tokens():
    from transformers import AutoModelForCausalLM

    tok = load_tokenizer("builtin:tiny-qwen3")
    item = demo_ids(tok, _demo())
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(resolve_model_path("builtin:tiny-qwen3"), dtype=torch.float32)
    before = sum(token_margins(model, item))
    losses = sft(model, [item], steps=5, lr=3e-3, batch_size=1)
    assert losses[-1] < losses[0] and sum(token_margins(model, item)) > before
