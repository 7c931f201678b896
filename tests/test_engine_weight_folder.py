"""What ``--backend vllm`` / ``sglang`` hand their engine servers to reload
(:mod:`openclaw_rl.engine.weight_folder`): a bad folder is refused before any engine sees it (a
vLLM worker that fails half-way through a reload is left broken), an adapter is merged into a
model folder beside it, a state_dict is saved as one."""

from __future__ import annotations

import shutil

import pytest
import torch

from openclaw_rl.engine.weight_check import InvalidWeightsError
from openclaw_rl.engine.weight_folder import engine_weights_folder, safetensors_shapes
from openclaw_rl.models import load_model, resolve_model_path
from tests.support.vllm_model import vllm_tiny_model


@pytest.fixture(scope="module")
def base():
    return vllm_tiny_model()


def _copy(base, dst):
    shutil.copytree(base, dst)
    return dst


def test_a_model_folder_of_the_same_shapes_is_taken_as_it_is(base, tmp_path):
    folder = _copy(base, tmp_path / "v1")
    assert engine_weights_folder(str(folder), base) == folder


def test_folders_that_do_not_fit_are_refused_by_name(base, tmp_path):
    with pytest.raises(InvalidWeightsError, match="hidden_size"):
        engine_weights_folder(str(resolve_model_path("builtin:tiny-qwen3")), base)
    truncated = _copy(base, tmp_path / "truncated")
    data = (truncated / "model.safetensors").read_bytes()
    (truncated / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(InvalidWeightsError, match="truncated or corrupt"):
        engine_weights_folder(str(truncated), base)
    missing = _copy(base, tmp_path / "missing")
    from safetensors.torch import load_file, save_file
    tensors = load_file(missing / "model.safetensors")
    tensors.pop("model.norm.weight")
    save_file(tensors, missing / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(InvalidWeightsError, match="1 missing tensor"):
        engine_weights_folder(str(missing), base)
    with pytest.raises(InvalidWeightsError, match="not a folder"):
        engine_weights_folder(str(tmp_path / "nowhere"), base)


def test_an_adapter_is_merged_into_a_model_folder_beside_it(base, tmp_path):
    from peft import LoraConfig, get_peft_model

    adapter = get_peft_model(load_model(base), LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    torch.manual_seed(0)
    for name, p in adapter.named_parameters():
        if "lora_B" in name:  # peft starts B at zero (a no-op adapter)
            torch.nn.init.normal_(p, std=0.5)
    adapter.save_pretrained(tmp_path / "adapter-3")
    expected = adapter.merge_and_unload().state_dict()
    original = load_model(base).state_dict()

    folder = engine_weights_folder(str(tmp_path / "adapter-3"), base)
    assert folder == tmp_path / ".adapter-3.merged" and (folder / "config.json").is_file()
    assert safetensors_shapes(folder) == safetensors_shapes(base)
    merged = load_model(folder).state_dict()
    changed = [k for k in original if not torch.equal(merged[k], original[k])]
    assert changed and all("q_proj" in k or "v_proj" in k for k in changed)
    assert all(torch.allclose(merged[k], expected[k]) for k in original)


def test_a_state_dict_is_saved_as_a_model_folder(base):
    state = {k: v + 1.0 for k, v in load_model(base).state_dict().items()}
    folder = engine_weights_folder(state, base)
    try:
        loaded = load_model(folder).state_dict()
        assert all(torch.equal(loaded[k], state[k]) for k in state)
        with pytest.raises(InvalidWeightsError, match="missing"):
            engine_weights_folder({k: v for k, v in list(state.items())[1:]}, base)
    finally:
        shutil.rmtree(folder.parent)
