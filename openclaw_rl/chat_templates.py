"""Chat templates for the built-in models.

Both templates follow the Hermes / Qwen2.5 / Qwen3 tool-calling convention, which is what
:mod:`openclaw_rl.server.tool_parser` parses back out of generated text:

* tools are listed in the system turn as JSON inside ``<tools></tools>``;
* an assistant tool call is ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``;
* tool results go back as a ``user`` turn wrapping each result in ``<tool_response>``;
* an assistant's ``reasoning_content`` is rendered as ``<think>\\n...\\n</think>\\n\\n`` before
  its content (Qwen3 style; only the Qwen template has dedicated ``<think>`` tokens).

Rendering is deterministic and *prefix-stable*: rendering ``messages + [assistant reply]``
starts with the rendering of ``messages`` plus the generation prompt, so a multi-turn session
re-uses the previous prompt token-for-token unless the client changes the history (for example
by dropping ``reasoning_content``), which capture detects and records.
"""

from __future__ import annotations

#: Qwen3 special tokens, in id order from 151643 (as in Qwen3's tokenizer_config.json).
QWEN3_SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
)

_TOOLS_BLOCK = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}"
    "{%- else %}{{- DEFAULT_SYSTEM + '\\n\\n' }}{%- endif %}"
    "{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n"
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}"
    "{%- else %}"
    "{%- if messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- elif DEFAULT_SYSTEM %}{{- '<|im_start|>system\\n' + DEFAULT_SYSTEM + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endif %}"
)

_MESSAGES_BLOCK = (
    "{%- for message in messages %}"
    "{%- if message.role == 'system' and loop.first %}"
    "{%- elif message.role == 'user' or message.role == 'system' %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if message.reasoning_content %}"
    "{{- '<think>\\n' + message.reasoning_content.strip('\\n') + '\\n</think>\\n\\n' }}"
    "{%- endif %}"
    "{%- if message.content %}{{- message.content }}{%- endif %}"
    "{%- if message.tool_calls %}"
    "{%- for tool_call in message.tool_calls %}"
    "{%- if (loop.first and message.content) or (not loop.first) %}{{- '\\n' }}{%- endif %}"
    "{%- set fn = tool_call.function if tool_call.function else tool_call %}"
    "{{- '<tool_call>\\n{\"name\": \"' + fn.name + '\", \"arguments\": ' }}"
    "{%- if fn.arguments is string %}{{- fn.arguments }}{%- else %}{{- fn.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}"
    "{{- '<|im_start|>user' }}"
    "{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def _template(default_system: str) -> str:
    quoted = default_system.replace("'", "\\'")
    return "{%- set DEFAULT_SYSTEM = '" + quoted + "' %}" + _TOOLS_BLOCK + _MESSAGES_BLOCK


#: Qwen3-style template (used by ``builtin:tiny-qwen3``): no default system turn.
QWEN3_CHAT_TEMPLATE = _template("")

#: SmolLM2-Instruct's own template extended with tools and reasoning (``builtin:smollm2-135m``);
#: keeps SmolLM2's default system prompt so plain chats render exactly as the original.
SMOLLM2_CHAT_TEMPLATE = _template("You are a helpful AI assistant named SmolLM, trained by Hugging Face")
