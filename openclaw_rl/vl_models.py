"""``builtin:tiny-qwen2-vl``: a tiny random Qwen2-VL model, built offline in seconds.

The vision-language policy path (docs/vision.md) is tested on this model: a
``Qwen2VLForConditionalGeneration`` from a seeded config (2 text layers of width 64, a 1-block
vision tower of width 32 with the patch merger; about 0.3M parameters), a byte-level BPE
tokenizer trained here with the ``tokenizers`` library on the docstrings of a fixed list of
standard-library modules (a 2048-token vocabulary over the 256 byte symbols, so it encodes any
UTF-8 text) plus the Qwen2-VL / Qwen3 special tokens (``<|im_start|>``, ``<|vision_start|>``,
``<|image_pad|>``, ``<tool_call>``, ...), a Qwen-style chat template that renders image content
parts as ``<|vision_start|><|image_pad|><|vision_end|>``, and Qwen2-VL's image processor (PIL
backend; :func:`load_processor` builds the ``Qwen2VLProcessor`` around it), which resizes to between 4 and 16 merged tokens (``min_pixels = 4 * 28 * 28``, ``max_pixels
= 16 * 28 * 28``), so a 160x210 MiniWoB screenshot is 12 image tokens (48 patches of 14x14).

On a GPU host the same code paths take a real Qwen2-VL / Qwen2.5-VL / Qwen3-VL checkpoint folder.
"""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path

from openclaw_rl.chat_templates import QWEN3_CHAT_TEMPLATE, QWEN3_SPECIAL_TOKENS

__all__ = ["IMAGE_MAX_PIXELS", "IMAGE_MIN_PIXELS", "QWEN2_VL_CHAT_TEMPLATE", "build_tiny_qwen2_vl",
           "train_tiny_tokenizer"]

#: the image processor's pixel budget: 4 to 16 merged tokens of 28x28 pixels
IMAGE_MIN_PIXELS = 4 * 28 * 28
IMAGE_MAX_PIXELS = 16 * 28 * 28
#: size of the trained byte-level BPE vocabulary (special tokens come after it)
TINY_VOCAB = 2048
#: standard-library modules whose docstrings are the tokenizer's training text (fixed list)
_CORPUS_MODULES = ("json", "html", "argparse", "textwrap", "string", "collections", "functools",
                   "itertools", "pathlib", "typing", "base64", "difflib", "shutil", "subprocess")

_CONTENT_MACRO = (
    "{%- macro render_content(content) -%}"
    "{%- if content is string -%}{{- content -}}"
    "{%- elif content -%}{%- for part in content -%}"
    "{%- if part.type == 'image' or part.type == 'image_url' -%}"
    "{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif part.text is defined -%}{{- part.text -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{%- endmacro -%}"
)

#: the Qwen3-style template with content given as a string or a list of ``text`` / ``image``
#: parts (an image part renders ``<|vision_start|><|image_pad|><|vision_end|>``; the processor
#: expands ``<|image_pad|>`` to the image's token count), as Qwen2-VL's own template does
QWEN2_VL_CHAT_TEMPLATE = _CONTENT_MACRO + (QWEN3_CHAT_TEMPLATE
                                           .replace("messages[0].content", "render_content(messages[0].content)")
                                           .replace("message.content", "render_content(message.content)"))


def _corpus() -> list[str]:
    texts = []
    for name in _CORPUS_MODULES:
        module = importlib.import_module(name)
        for _, obj in sorted(vars(module).items()):
            doc = inspect.getdoc(obj) if callable(obj) or inspect.ismodule(obj) else None
            if doc:
                texts.append(doc)
        if module.__doc__:
            texts.append(module.__doc__)
    return texts


def train_tiny_tokenizer():
    """Train the byte-level BPE tokenizer of ``builtin:tiny-qwen2-vl`` (about a second).

    Returns:
        A ``PreTrainedTokenizerFast``: :data:`TINY_VOCAB` BPE tokens trained on the docstrings
        of :data:`_CORPUS_MODULES`, then the Qwen3 special tokens in Qwen's order (``<|im_end|>``
        is EOS, ``<|endoftext|>`` pad), ``image_token`` ``<|image_pad|>``, and
        :data:`QWEN2_VL_CHAT_TEMPLATE`.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=TINY_VOCAB, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    backend.train_from_iterator(_corpus(), trainer=trainer)
    backend.add_special_tokens(list(QWEN3_SPECIAL_TOKENS))
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                  clean_up_tokenization_spaces=False)
    tok.chat_template = QWEN2_VL_CHAT_TEMPLATE
    return tok


def build_tiny_qwen2_vl(out: Path) -> None:
    """Write ``builtin:tiny-qwen2-vl`` into the folder ``out`` (model, tokenizer, processor).

    The weights are seeded (``torch.manual_seed(0)``), so the model is the same on every
    machine with the same library versions. Raises whatever transformers raises on save.
    """
    import torch
    from transformers import GenerationConfig, Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tok = train_tiny_tokenizer()
    ids = {t: tok.convert_tokens_to_ids(t) for t in ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
                                                      "<|video_pad|>")}
    vocab = len(tok)
    text_config = dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                       rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                        "mrope_section": [2, 3, 3]},
                       tie_word_embeddings=True, bos_token_id=None, eos_token_id=tok.eos_token_id,
                       pad_token_id=tok.pad_token_id)
    vision_config = dict(depth=1, embed_dim=32, hidden_size=64, num_heads=2, mlp_ratio=2, patch_size=14,
                         spatial_merge_size=2, temporal_patch_size=2, in_channels=3)
    config = Qwen2VLConfig(text_config=text_config, vision_config=vision_config,
                           image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                           vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
                           tie_word_embeddings=True)
    torch.manual_seed(0)
    model = Qwen2VLForConditionalGeneration(config)
    model.generation_config = GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    image_processor = Qwen2VLImageProcessorPil(min_pixels=IMAGE_MIN_PIXELS, max_pixels=IMAGE_MAX_PIXELS,
                                               size={"shortest_edge": IMAGE_MIN_PIXELS,
                                                     "longest_edge": IMAGE_MAX_PIXELS})
    model.save_pretrained(out)
    tok.save_pretrained(out)
    image_processor.save_pretrained(out)
    # the processor's own record, so AutoProcessor builds Qwen2VLProcessor where torchvision is installed
    (out / "processor_config.json").write_text(json.dumps({"processor_class": "Qwen2VLProcessor"}) + "\n")


def _image_only_processor_class():
    """``Qwen2VLProcessor`` without the video processor (transformers' video processors need
    ``torchvision``, which a CPU host may lack); images are processed identically."""
    from transformers import Qwen2VLProcessor

    class ImageOnlyQwen2VLProcessor(Qwen2VLProcessor):
        """Qwen2-VL's processor for images and text only (no ``video_processor``)."""

        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
            self.video_processor = None
            super(Qwen2VLProcessor, self).__init__(image_processor, tokenizer, chat_template=chat_template)
            self.image_token = getattr(tokenizer, "image_token", None) or "<|image_pad|>"
            self.video_token = getattr(tokenizer, "video_token", None) or "<|video_pad|>"
            self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
            self.video_token_id = tokenizer.convert_tokens_to_ids(self.video_token)

    return ImageOnlyQwen2VLProcessor


def has_vision(folder: str | Path) -> bool:
    """Whether the model folder is a vision-language model: its ``config.json`` has a
    ``vision_config`` and the folder an image processor (``preprocessor_config.json``)."""
    folder = Path(folder)
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return "vision_config" in config and (folder / "preprocessor_config.json").is_file()


def load_processor(folder: str | Path):
    """The multimodal processor of a vision-language model folder, or None for a text model.

    ``AutoProcessor`` where transformers can build the model's own processor class; without
    ``torchvision`` (CPU hosts) a Qwen2-VL processor without the video part over the folder's
    image processor (the PIL backend) and tokenizer, which processes images identically.
    """
    if not has_vision(folder):
        return None
    from transformers import AutoImageProcessor, AutoProcessor, AutoTokenizer, ProcessorMixin

    try:
        processor = AutoProcessor.from_pretrained(folder)
        if isinstance(processor, ProcessorMixin) and getattr(processor, "image_processor", None) is not None:
            return processor
    except (AttributeError, ImportError, ValueError, TypeError):
        pass
    tokenizer = AutoTokenizer.from_pretrained(folder)
    image_processor = AutoImageProcessor.from_pretrained(folder, backend="pil")
    return _image_only_processor_class()(image_processor, tokenizer, chat_template=tokenizer.chat_template)
