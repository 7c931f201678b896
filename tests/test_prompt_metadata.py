"""``--metadata-key`` (a prompt row's metadata reaches every sample) and ``--reward-key`` (the reward
inside a dict a reward plugin returns), through the real prompt-dataset rollout with plugin files."""

from __future__ import annotations

import asyncio
import json

import pytest

from openclaw_rl.rollout.prompt_rollout import generate_rollout
from slime.record.prompt_data import load_prompts
from slime.plugins.reward import RewardPlugin
from slime.config.run_args import parse_run_args
from slime.record.sample import Sample

GENERATE = '''
async def generate(args, sample, sampling_params):
    """Answers every prompt with the ids of its first two characters (a deterministic policy)."""
    text = sample.prompt if isinstance(sample.prompt, str) else sample.prompt[-1]["content"]
    sample.tokens = [1, 2, 3] + [ord(ch) for ch in text[:2]]
    sample.response_length = 2
    sample.rollout_log_probs = [-0.5, -0.5]
    sample.loss_mask = [1, 1]
    sample.response = text[:2]
    return sample
'''

REWARD = '''
async def reward(args, sample) -> dict:
    """Scores 1.0 when the response starts the label, else -1.0; also reports the label length."""
    ok = str(sample.label).startswith(sample.response)
    return {"score": 1.0 if ok else -1.0, "label_len": len(str(sample.label))}
'''


@pytest.fixture
def plugin_files(tmp_path):
    data = tmp_path / "prompts.jsonl"
    rows = [{"question": "abc", "answer": "ab", "meta": {"task_key": "t0", "env_type": "math_tool"}},
            {"question": "xyz", "answer": "no", "meta": {"task_key": "t1", "env_type": "terminal", "group_index": 99}}]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "gen.py").write_text(GENERATE)
    (tmp_path / "rm.py").write_text(REWARD)
    return tmp_path


def test_load_prompts_reads_the_metadata_field(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "a", "label": 1, "metadata": {"task_key": "k"}}\n{"prompt": "b"}\n')
    assert load_prompts(str(f)) == [{"prompt": "a", "label": 1, "metadata": {"task_key": "k"}},
                                    {"prompt": "b", "label": None, "metadata": {}}]
    assert load_prompts(str(f), metadata_key="other")[0]["metadata"] == {}
    f.write_text('{"prompt": "a", "metadata": [1, 2]}\n')
    with pytest.raises(ValueError, match="line 1: 'metadata' must be a JSON object"):
        load_prompts(str(f))


def test_rollout_merges_row_metadata_and_reads_the_reward_key(plugin_files):
    d = plugin_files
    cfg = parse_run_args(["--prompt-data", str(d / "prompts.jsonl"), "--input-key", "question",
                          "--label-key", "answer", "--metadata-key", "meta",
                          "--custom-generate-function-path", str(d / "gen.py"),
                          "--custom-rm-path", str(d / "rm.py"), "--reward-key", "score",
                          "--rollout-batch-size", "2", "--n-samples-per-prompt", "2"], environ={})
    groups, metrics = generate_rollout(cfg, 0)
    assert [len(g) for g in groups] == [2, 2] and metrics["rollout/failed"] == 0
    for g, group in enumerate(groups):
        for k, s in enumerate(group):
            assert s.metadata["task_key"] == f"t{g}" and s.metadata["env_type"] == ["math_tool", "terminal"][g]
            # the rollout's own ids win over a row field of the same name (row 1 says group_index 99)
            assert (s.metadata["group_index"], s.metadata["index"]) == (g, 2 * g + k)
            assert s.reward == [1.0, -1.0][g] and s.metadata["reward_details"] == {"label_len": 2}
    # the copies are independent: editing one sample's metadata leaves the others alone
    groups[0][0].metadata["task_key"] = "changed"
    assert groups[0][1].metadata["task_key"] == "t0"


def test_reward_key_missing_is_a_clear_error(plugin_files):
    cfg = parse_run_args(["--reward-key", "points"], environ={})
    plugin = RewardPlugin(str(plugin_files / "rm.py"), cfg)
    s = Sample(tokens=[1, 2], response_length=1, rollout_log_probs=[-1.0], label="ab", response="a")
    with pytest.raises(ValueError, match="no key 'points': set --reward-key"):
        asyncio.run(plugin.score_one(s))
