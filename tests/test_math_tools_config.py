"""toolcall-rl tools config: the shipped file, TOOLS_CONFIG / TOOL_CONFIGS precedence, one-line errors."""

import json
from pathlib import Path

import pytest

from openclaw_rl.envs.math_tool.tools_config import ToolsConfig, ToolsConfigError, load_tools_config, memory_mb

SHIPPED = Path(__file__).resolve().parents[1] / "toolcall-rl" / "tools_config.json"


def test_the_shipped_file_is_valid_and_equals_the_defaults():
    cfg = load_tools_config(SHIPPED, env={})
    assert cfg.model_dump(exclude={"description"}) == ToolsConfig().model_dump(exclude={"description"})
    assert cfg.tool_names == ["code_interpreter"] and cfg.memory_mb == 1024
    assert load_tools_config(env={}) == ToolsConfig()


def test_tool_configs_overrides_tools_config_field_by_field(tmp_path):
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"max_turns": 5, "python_timeout": 9}))
    cfg = load_tools_config(env={"TOOLS_CONFIG": str(base), "TOOL_CONFIGS": '{"max_turns": 2}'})
    assert (cfg.max_turns, cfg.python_timeout) == (2, 9)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"python_memory_limit": "4GB"}))
    cfg = load_tools_config(env={"TOOL_CONFIGS": str(other)})
    assert cfg.memory_mb == 4096 and cfg.max_turns == 16
    assert load_tools_config(base, env={"TOOL_CONFIGS": " "}).max_turns == 5


@pytest.mark.parametrize("value, mb", [("4GB", 4096), ("512MB", 512), ("1.5GiB", 1536), ("2G", 2048), (300, 300),
                                       ("2048", 2048), ("1TB", 1024 * 1024)])
def test_memory_sizes(value, mb):
    assert memory_mb(value) == mb


@pytest.mark.parametrize("value", ["lots", "", "-1GB", "0MB", "512KB", True])
def test_bad_memory_sizes(value):
    with pytest.raises(ValueError):
        memory_mb(value)


@pytest.mark.parametrize("source, message", [
    ('{"max_turns": 0}', "tools config (TOOL_CONFIGS): max_turns: Input should be greater than or equal to 1"),
    ('{"python_memory_limit": "lots"}', "python_memory_limit: Value error, not a memory size: 'lots'"),
    ('{"bogus": 1}', "bogus: Extra inputs are not permitted"),
    ('{"tools": [{"type": "function"}]}', "tools: Value error, tools[0] must be an OpenAI tool schema"),
    ("[1, 2]", "TOOL_CONFIGS: must be a JSON object, got list"),
    ("{oops", "TOOL_CONFIGS: not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
    ("/nonexistent/tools.json", "TOOL_CONFIGS: cannot read /nonexistent/tools.json: No such file or directory"),
])
def test_bad_configs_fail_with_one_line(source, message):
    with pytest.raises(ToolsConfigError) as info:
        load_tools_config(env={"TOOL_CONFIGS": source})
    assert message in str(info.value) and "\n" not in str(info.value)
