"""Tests for slime.trainer.checkpoint: full-model and LoRA save/load round trips, latest link, RNG, pruning."""

from __future__ import annotations

import copy
import json
import os

import pytest
import torch

from slime.trainer.checkpoint import (RUN_CONFIG, STATE_FILE, TrainerState, find_latest_checkpoint, load_checkpoint,
                                     resume_step, save_checkpoint)


def _train_step(model, optimizer, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 512, (2, 6), generator=g)
    optimizer.zero_grad()
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()


def _opt_state_equal(sa, sb):
    assert sa["param_groups"] == sb["param_groups"]
    assert sa["state"].keys() == sb["state"].keys()
    for k in sa["state"]:
        for name, v in sa["state"][k].items():
            torch.testing.assert_close(sb["state"][k][name], v, atol=0, rtol=0)


def _tokenizer():
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(WordLevel({"[UNK]": 0, "hi": 1}, unk_token="[UNK]"))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")


def test_full_model_round_trip(tiny_model, tmp_path):
    opt = torch.optim.AdamW(tiny_model.parameters(), lr=1e-3)
    _train_step(tiny_model, opt, 0)
    weights = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    opt_before = {k: {n: v.clone() if torch.is_tensor(v) else v for n, v in s.items()}
                  for k, s in opt.state_dict()["state"].items()}

    ckpt = save_checkpoint(tmp_path, TrainerState(step=3, weight_version=3, data_cursor=42, extra={"lr": 1e-3}),
                           tiny_model, opt, tokenizer=_tokenizer())
    after_save = torch.rand(4)  # the RNG stream right after saving

    assert ckpt == tmp_path / "checkpoint-3"
    assert os.path.islink(tmp_path / "checkpoint-latest")
    assert os.readlink(tmp_path / "checkpoint-latest") == "checkpoint-3"
    assert (ckpt / "model.safetensors").is_file() and (ckpt / "optimizer.pt").is_file()
    assert (ckpt / "tokenizer.json").is_file()
    assert json.loads((ckpt / "trainer_state.json").read_text())["data_cursor"] == 42

    _train_step(tiny_model, opt, 1)  # modify weights and optimizer state
    assert not torch.equal(tiny_model.model.embed_tokens.weight, weights["model.embed_tokens.weight"])

    opt2 = torch.optim.AdamW(tiny_model.parameters(), lr=1e-3)
    state = load_checkpoint(tmp_path, tiny_model, opt2)  # save dir -> checkpoint-latest
    assert (state.step, state.weight_version, state.data_cursor, state.extra) == (3, 3, 42, {"lr": 1e-3})
    for k, v in tiny_model.state_dict().items():
        torch.testing.assert_close(v, weights[k], atol=0, rtol=0)
    for k, s in opt2.state_dict()["state"].items():
        for n, v in s.items():
            torch.testing.assert_close(v, opt_before[k][n], atol=0, rtol=0)
    torch.testing.assert_close(torch.rand(4), after_save, atol=0, rtol=0)

    # the checkpoint is a plain Hugging Face directory
    from transformers import AutoModelForCausalLM

    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path / "checkpoint-latest", dtype=torch.float64)
    torch.testing.assert_close(reloaded.lm_head.weight, weights["lm_head.weight"], atol=0, rtol=0)


def test_latest_moves_and_old_checkpoints_are_pruned(tiny_model, tmp_path):
    opt = torch.optim.SGD(tiny_model.parameters(), lr=0.1)
    save_checkpoint(tmp_path, TrainerState(step=1), tiny_model, opt)
    save_checkpoint(tmp_path, TrainerState(step=2), tiny_model, opt)
    save_checkpoint(tmp_path, TrainerState(step=10), tiny_model, opt, keep_last=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-10", "checkpoint-2", "checkpoint-latest"]
    assert find_latest_checkpoint(tmp_path) == (tmp_path / "checkpoint-10").resolve()
    # a specific checkpoint directory can be loaded directly
    assert load_checkpoint(tmp_path / "checkpoint-2", tiny_model, restore_rng=False).step == 2


def test_missing_checkpoint_raises(tiny_model, tmp_path):
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path, tiny_model)


def test_wrong_architecture_raises(tiny_model, tmp_path):
    save_checkpoint(tmp_path, TrainerState(step=0), tiny_model)
    from transformers import Qwen3Config, Qwen3ForCausalLM

    other = Qwen3ForCausalLM(Qwen3Config(vocab_size=512, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                         num_key_value_heads=2, head_dim=8, intermediate_size=64))
    with pytest.raises(ValueError, match="unexpected"):
        load_checkpoint(tmp_path, other)


def test_lora_round_trip(tiny_model, tmp_path):
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(tiny_model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    _train_step(model, opt, 0)  # lora_B leaves zero
    lora = {k: v.clone() for k, v in model.state_dict().items() if "lora_" in k}
    assert any(v.abs().sum() > 0 for k, v in lora.items() if "lora_B" in k)

    opt_saved = copy.deepcopy(opt.state_dict())
    ckpt = save_checkpoint(tmp_path, TrainerState(step=5, weight_version=5), model, opt)
    assert (ckpt / "adapter_model.safetensors").is_file() and (ckpt / "adapter_config.json").is_file()
    assert not (ckpt / "model.safetensors").exists()  # adapter only

    _train_step(model, opt, 1)
    opt2 = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    state = load_checkpoint(ckpt, model, opt2)
    assert state.step == 5
    for k, v in model.state_dict().items():
        if "lora_" in k:
            torch.testing.assert_close(v, lora[k], atol=0, rtol=0)
    _opt_state_equal(opt_saved, opt2.state_dict())


def test_tied_embeddings_round_trip(tmp_path):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    model = Qwen3ForCausalLM(Qwen3Config(vocab_size=512, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                         num_key_value_heads=2, head_dim=8, intermediate_size=64,
                                         tie_word_embeddings=True))
    assert model.lm_head.weight is model.model.embed_tokens.weight
    saved = model.model.embed_tokens.weight.detach().clone()
    save_checkpoint(tmp_path, TrainerState(step=1), model)
    with torch.no_grad():
        model.model.embed_tokens.weight.add_(1.0)
    load_checkpoint(tmp_path, model)
    torch.testing.assert_close(model.lm_head.weight.detach(), saved, atol=0, rtol=0)


def test_lora_adapter_mismatch_raises(tmp_path, make_tiny_model):
    from peft import LoraConfig, get_peft_model

    small = get_peft_model(make_tiny_model(), LoraConfig(r=4, target_modules=["q_proj"]))
    save_checkpoint(tmp_path, TrainerState(step=0), small)
    wider = get_peft_model(make_tiny_model(), LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    with pytest.raises(ValueError, match="lacks LoRA weights"):
        load_checkpoint(tmp_path, wider)


def test_resume_step_is_read_from_disk_as_the_train_actor_loads_it(tmp_path):
    """The driver starts the rollout manager with the step a resumed run continues from before the
    train actors have loaded anything: no path -> None, a save folder without a checkpoint -> 0,
    a save folder or a checkpoint folder -> that checkpoint's step; anything else is refused."""
    assert resume_step(None) is None and resume_step("") is None
    save = tmp_path / "save"
    save.mkdir()
    (save / RUN_CONFIG).write_text("{}")
    assert resume_step(save) == 0
    ckpt = save / "checkpoint-7"
    ckpt.mkdir()
    (ckpt / STATE_FILE).write_text(TrainerState(step=7, weight_version=3).to_json())
    assert resume_step(save) == 7 == resume_step(ckpt)
    with pytest.raises(FileNotFoundError, match="nowhere"):
        resume_step(tmp_path / "nowhere")
