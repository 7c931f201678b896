"""OPD and Combine building blocks: hint parsing and selection, the teacher context, token
alignment, zero advantage for identical contexts, the dispatch table and per-branch normalisation.

Real tiny models (``builtin:tiny-qwen3``: real Qwen vocabulary and chat template), a real server
for the render check, the real training backend for teacher scoring.
"""

from __future__ import annotations

import asyncio
import math

import httpx
import pytest
import torch

from openclaw_rl.judges.backends import JudgeBackend
from openclaw_rl.judges.hints import HintVote, clean_hint, parse_hint_vote, select_hint
from openclaw_rl.models import load_model, load_tokenizer
from openclaw_rl.opd.advantages import combine_advantages, dispatch_branch, opd_advantages
from openclaw_rl.opd.hint_prompt import HINT_FORMAT, hinted_messages, teacher_prompt_ids
from openclaw_rl.opd.teacher import response_logprobs, score_teacher
from slime.record.sample import Sample

TINY = "builtin:tiny-qwen3"


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(TINY)


# ----------------------------------------------------------------------------- hint parsing
def test_parse_accept_with_hint():
    v = parse_hint_vote("Decision: accept\n<hint>Answer in plain sentences, without lists.</hint>")
    assert v == HintVote(1, "Answer in plain sentences, without lists.")


def test_parse_hint_before_decision_and_markdown_decision():
    v = parse_hint_vote("<hint>Read configs/config.yaml instead.</hint>\n**Decision:** Accept")
    assert v.decision == 1 and v.hint == "Read configs/config.yaml instead."


def test_parse_missing_markers():
    assert parse_hint_vote("Decision: accept\nUse plain sentences.") == HintVote(None, reason="no_hint")
    assert parse_hint_vote("I think the answer was fine.") == HintVote(None, reason="no_decision")
    assert parse_hint_vote("") == HintVote(None, reason="no_decision")
    assert parse_hint_vote(None).decision is None
    # an unclosed block ends at the decision line
    v = parse_hint_vote("<hint>Call read with the path configs/config.yaml.\nDecision: accept")
    assert v == HintVote(1, "Call read with the path configs/config.yaml.")
    # a hint block without a decision line counts as an accept
    assert parse_hint_vote("<hint>Use the metric system for all units.</hint>").decision == 1


def test_parse_multiple_blocks_and_decisions_last_wins():
    text = ("<hint>first draft hint here</hint>\nDecision: reject\nOn reflection:\n"
            "<hint>Give the total in euros, not dollars.</hint>\nDecision: accept")
    assert parse_hint_vote(text) == HintVote(1, "Give the total in euros, not dollars.")
    assert parse_hint_vote("<hint>Some long enough hint text.</hint>\nDecision: reject") == HintVote(-1)
    assert parse_hint_vote("<hint></hint><hint>Explain each step of the proof.</hint>\nDecision: +1").hint == \
        "Explain each step of the proof."


def test_parse_unicode_and_cleanup():
    v = parse_hint_vote("Decision: accept\n<hint>  “Réponds en phrases simples, sans listes.”  </hint>")
    assert v.hint == "Réponds en phrases simples, sans listes."
    v = parse_hint_vote("Decision: accept\n<hint>日本語で答えてください。 箇条書きは使わないでください。</hint>", min_chars=5)
    assert v.decision == 1 and "箇条書き" in v.hint
    # NFD input is normalised to NFC
    assert clean_hint("Cafe\u0301 names must keep accents.") == "Café names must keep accents."
    # at most three sentences
    assert clean_hint("One thing. Two things! Three things? Four things.") == "One thing. Two things! Three things?"


def test_short_hints_are_rejected():
    assert parse_hint_vote("Decision: accept\n<hint>Be nice.</hint>") == HintVote(-1, reason="too_short")
    assert parse_hint_vote("Decision: accept\n<hint>Be nice.</hint>", min_chars=5).decision == 1


def test_select_hint_keeps_the_longest_accepted():
    votes = [HintVote(1, "Use plain sentences."), HintVote(-1), HintVote(None),
             HintVote(1, "Use plain sentences and no bold text."), HintVote(1, "Use plain sentences, ok.")]
    j = select_hint(votes)
    assert j.accepted and j.hint == "Use plain sentences and no bold text."
    assert (j.n_accept, j.n_reject, j.n_invalid) == (3, 1, 1)
    assert j.to_metadata()["hint_votes"] == {"accept": 3, "reject": 1, "invalid": 1}
    assert not select_hint([HintVote(-1), HintVote(None)]).accepted


# ----------------------------------------------------------------------------- teacher context
def test_hinted_messages_format():
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "first"},
            {"role": "assistant", "content": "a"}, {"role": "user", "content": "second"},
            {"role": "tool", "content": "t"}]
    out = hinted_messages(msgs, " Use plain sentences. ")
    assert out[3]["content"] == "second" + HINT_FORMAT.format(hint="Use plain sentences.")
    assert out[1]["content"] == "first" and msgs[3]["content"] == "second"  # input untouched
    parts = hinted_messages([{"role": "user", "content": [{"type": "text", "text": "q"}]}], "h")
    assert parts[0]["content"][-1] == {"type": "text", "text": "\n\n[Hint: h]"}
    assert hinted_messages([{"role": "system", "content": "S"}], "h")[-1] == {"role": "user", "content": "[Hint: h]"}
    with pytest.raises(ValueError):
        hinted_messages(msgs, "  ")


def test_teacher_prompt_is_the_server_prompt_plus_the_hint(tiny_server, tok):
    from openclaw_rl.capture.store import TrajectoryStore

    r = httpx.post(tiny_server.base_url + "/chat/completions", timeout=120,
                   headers={"Authorization": "Bearer sk-test", "X-Session-Id": "opd-render"},
                   json={"messages": [{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "Écris 世界 🎉"}], "max_tokens": 4})
    assert r.status_code == 200
    store = TrajectoryStore(tiny_server.buffer_dir)
    try:
        turn = store.turns("opd-render")[-1]
    finally:
        store.close()
    assert teacher_prompt_ids(tok, turn.messages, turn.tools, None, turn.prompt_ids) == turn.prompt_ids
    assert teacher_prompt_ids(tok, turn.messages, turn.tools, "", turn.prompt_ids) == turn.prompt_ids
    ids = teacher_prompt_ids(tok, turn.messages, turn.tools, "Answer in French.", turn.prompt_ids)
    expected = turn.prompt_text.replace("Écris 世界 🎉", "Écris 世界 🎉\n\n[Hint: Answer in French.]")
    assert tok.decode(ids) == expected != turn.prompt_text


def test_teacher_logprobs_align_with_student_tokens_multibyte(tok):
    model = load_model(TINY).eval()
    student_msgs = [{"role": "user", "content": "Say hello"}]
    prompt = tok.apply_chat_template(student_msgs, add_generation_prompt=True, tokenize=False)
    prompt_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    response_ids = tok("Réponse: 世界 🎉 naïve façade", add_special_tokens=False)["input_ids"]
    assert len(response_ids) > 8  # multi-token, multi-byte
    t_ids = teacher_prompt_ids(tok, student_msgs, None, "Say it in French.", prompt_ids)
    got = response_logprobs(model, t_ids, response_ids, temperature=0.7)
    assert got.shape == (len(response_ids),)
    with torch.no_grad():  # one position at a time, no cache: the reference alignment
        for t, y in enumerate(response_ids):
            logits = model(torch.tensor([t_ids + response_ids[:t]])).logits[0, -1].float() / 0.7
            assert math.isclose(float(torch.log_softmax(logits, -1)[y]), float(got[t]), abs_tol=1e-4)


def _backend(extra: list[str] = ()):
    from slime.config.arguments import parse_args
    from slime.trainer.backend import TrainingBackend

    cfg = parse_args(["--model-path", TINY, "--rollout-batch-size", "2", "--lr", "1e-2",
                      "--rollout-temperature", "1.0", *extra])
    return TrainingBackend(cfg)


def _opd_sample(tok, hint: str | None) -> Sample:
    msgs = [{"role": "user", "content": "List three fruits."}]
    prompt_ids = tok(tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False),
                     add_special_tokens=False)["input_ids"]
    resp = tok("- apple\n- pear\n- plum", add_special_tokens=False)["input_ids"]
    s = Sample(tokens=prompt_ids + resp, response_length=len(resp), rollout_log_probs=[-1.0] * len(resp),
               reward=None, turn_id=f"t-{hint}")
    s.metadata["judgement"] = {"hint": hint, "branch": "opd",
                               "teacher_prompt_ids": teacher_prompt_ids(tok, msgs, None, hint, prompt_ids)}
    return s


@pytest.mark.parametrize("lora", [True, False])
def test_zero_advantage_for_identical_contexts(tok, lora):
    backend = _backend(["--use-lora", "--lora-rank", "4"] if lora else [])
    same, hinted = _opd_sample(tok, None), _opd_sample(tok, "Answer in plain sentences without lists.")
    samples, metrics = opd_advantages(score_teacher(backend, [same, hinted], "base"))
    assert same.advantages == [0.0] * same.response_length  # exactly zero
    assert any(a != 0.0 for a in hinted.advantages)
    assert metrics["opd/n"] == 2
    assert same.teacher_log_probs == same.rollout_log_probs  # no forward pass for identical contexts
    assert hinted.advantages == [t - o for t, o in zip(hinted.teacher_log_probs, hinted.rollout_log_probs)]


def test_base_teacher_stays_frozen_live_teacher_follows_policy(tok):
    backend = _backend(["--use-lora", "--lora-rank", "4"])
    s0 = score_teacher(backend, [_opd_sample(tok, "Answer in plain sentences without lists.")], "base")[0]
    with torch.no_grad():
        for name, p in backend.model.named_parameters():
            if "lora_B" in name:
                p.add_(0.05)
    s1 = score_teacher(backend, [_opd_sample(tok, "Answer in plain sentences without lists.")], "base")[0]
    s2 = score_teacher(backend, [_opd_sample(tok, "Answer in plain sentences without lists.")], "live")[0]
    assert s1.teacher_log_probs == pytest.approx(s0.teacher_log_probs, abs=1e-6)
    assert s2.teacher_log_probs != pytest.approx(s1.teacher_log_probs, abs=1e-4)
    with pytest.raises(ValueError, match="opd-teacher"):
        score_teacher(backend, [s0], "teacher")


# ----------------------------------------------------------------------------- Combine
def test_dispatch_table():
    assert dispatch_branch(True, 1) == dispatch_branch(True, -1) == "both"
    assert dispatch_branch(True, 0) == "opd"
    assert dispatch_branch(False, 1) == dispatch_branch(False, -1) == "rl"
    assert dispatch_branch(False, 0) == "none"
    with pytest.raises(ValueError):
        dispatch_branch(True, 2)


def _s(branch: str, reward, teacher, student) -> Sample:
    n = len(student)
    s = Sample(tokens=[1] + [2] * n, response_length=n, rollout_log_probs=list(student), reward=reward,
               teacher_log_probs=list(teacher) if teacher is not None else None)
    s.metadata.update(judgement={"branch": branch})
    return s


def test_combine_normalises_each_branch_over_its_own_tokens():
    both = _s("both", 1.0, [-1.0, -2.0], [-2.0, -1.0])            # raw OPD +1, -1
    opd = _s("opd", None, [-0.5, -0.5, -0.5], [-3.5, -0.5, -0.5])  # raw OPD +3, 0, 0
    rl = _s("rl", -1.0, None, [-1.0, -1.0])
    none = _s("none", None, None, [-1.0])
    samples, m = combine_advantages([both, opd, rl, none], w_opd=2.0, w_rl=0.5)
    rms = math.sqrt((1 + 1 + 9 + 0 + 0) / 5)
    assert m["combine/opd_rms"] == pytest.approx(rms) and m["combine/rl_rms"] == pytest.approx(1.0)
    assert both.advantages == pytest.approx([2 * 1 / rms + 0.5, 2 * -1 / rms + 0.5], rel=1e-5)
    assert opd.advantages == pytest.approx([2 * 3 / rms, 0.0, 0.0], rel=1e-5)
    assert rl.advantages == pytest.approx([-0.5, -0.5], rel=1e-5)
    assert none.advantages == [0.0] and none.loss_mask == [0]
    assert (m["combine/n_both"], m["combine/n_opd"], m["combine/n_rl"], m["combine/n_none"]) == (1, 1, 1, 1)
    # the OPD branch, normalised, has unit RMS times its weight over its own tokens
    opd_part = [both.advantages[0] - 0.5, both.advantages[1] - 0.5] + opd.advantages
    assert math.sqrt(sum(a * a for a in opd_part) / 5) == pytest.approx(2.0, rel=1e-5)
    # a mixed batch (some samples without a teacher) collates; teacher rows are 0 where absent
    from slime.record.batch import collate_samples
    batch = collate_samples([both, rl])
    assert batch.teacher_logprobs_B_T[0, 1:].tolist() == [-1.0, -2.0]
    assert batch.teacher_logprobs_B_T[1].tolist() == [0.0, 0.0, 0.0]
    assert m["combine/opd_contrib"] > 0 and m["combine/rl_contrib"] > 0


def test_combine_scale_invariance_of_the_rl_branch():
    a = [_s("rl", 3.0, None, [-1.0]), _s("rl", -3.0, None, [-1.0])]
    combine_advantages(a)
    assert [s.advantages[0] for s in a] == pytest.approx([1.0, -1.0], rel=1e-5)


def test_combine_batch_mean_baseline_weighs_the_few_accepted_replies_up():
    """--combine-rl-baseline batch-mean: 2 accepted and 6 rejected replies; without the baseline
    the rejected ones carry 3x the accepted ones' total advantage, with it the totals balance."""
    def batch():
        return [_s("rl", 1.0, None, [-1.0] * 4) for _ in range(2)] + [_s("rl", -1.0, None, [-1.0] * 4) for _ in range(6)]
    plain, centred = batch(), batch()
    _, m0 = combine_advantages(plain)
    _, m1 = combine_advantages(centred, rl_baseline="batch-mean")
    total = lambda ss: sum(sum(s.advantages) for s in ss)
    assert total(plain[:2]) == pytest.approx(-total(plain[2:]) / 3, rel=1e-5)  # outweighed 3:1
    assert total(centred[:2]) == pytest.approx(-total(centred[2:]), rel=1e-5)  # balanced
    assert m0["combine/rl_baseline"] == 0.0 and m1["combine/rl_baseline"] == pytest.approx(-0.5)
    rms = math.sqrt((2 * 1.5 ** 2 + 6 * 0.5 ** 2) / 8)
    assert centred[0].advantages == pytest.approx([1.5 / rms] * 4, rel=1e-5)
    assert centred[2].advantages == pytest.approx([-0.5 / rms] * 4, rel=1e-5)
    # a batch the user rejected throughout carries no RL signal (nothing better to move toward)
    same = [_s("rl", -1.0, None, [-1.0] * 2) for _ in range(3)]
    combine_advantages(same, rl_baseline="batch-mean")
    assert all(a == 0.0 for s in same for a in s.advantages)
    with pytest.raises(ValueError, match="rl_baseline"):
        combine_advantages(batch(), rl_baseline="median")


def test_opd_advantage_clip():
    s = _s("opd", None, [0.0, -9.0], [-5.0, 0.0])
    opd_advantages([s], clip=2.0)
    assert s.advantages == [2.0, -2.0]


# ----------------------------------------------------------------------------- judges
def _opd_judge_turn(tiny_server):
    """A real recorded turn whose next state is a correction (session ``opd-judge``)."""
    from openclaw_rl.capture.store import TrajectoryStore

    msgs = [{"role": "user", "content": "hi there"}]
    h = {"Authorization": "Bearer sk-test", "X-Session-Id": "opd-judge"}
    r = httpx.post(tiny_server.base_url + "/chat/completions", headers=h, timeout=120,
                   json={"messages": msgs, "max_tokens": 4, "seed": 7}).json()
    msgs += [r["choices"][0]["message"], {"role": "user", "content": "No, answer in French please."}]
    httpx.post(tiny_server.base_url + "/chat/completions", headers=h, timeout=120,
               json={"messages": msgs, "max_tokens": 4, "seed": 7})
    store = TrajectoryStore(tiny_server.buffer_dir)
    try:
        turn = store.turns("opd-judge")[0]
    finally:
        store.close()
    assert turn.next_state == "No, answer in French please."
    return turn


class _FixedHintBackend(JudgeBackend):
    """A deterministic hint judge: every vote accepts with the same hint (forces the accept path)."""

    name = "fixed"

    async def score(self, messages, n):
        from openclaw_rl.judges.backends import BackendScore
        return BackendScore(votes=[1] * n, texts=["Decision: accept\n<hint>Answer in French.</hint>"] * n)

    async def aclose(self):
        pass


def test_opd_judge_accept_path_builds_the_teacher_prompt(tiny_server, tok):
    """An accepted hint makes the turn trainable (branch ``opd``) and yields teacher prompt ids that
    decode to the turn's prompt with the hint appended to the last user message, exactly once."""
    from openclaw_rl.judges.hints import HintJudge
    from openclaw_rl.opd.judge import OPDTurnJudge

    turn = _opd_judge_turn(tiny_server)
    res = asyncio.run(OPDTurnJudge(HintJudge(_FixedHintBackend(), majority_vote_n=3, min_chars=1), tok).judge(turn))
    d = res.details
    assert res.trainable and d["hint_accepted"] and d["branch"] == "opd" and d["hint"] == "Answer in French."
    assert d["hint_votes"] == {"accept": 3, "reject": 0, "invalid": 0}
    text = tok.decode(d["teacher_prompt_ids"])
    assert text.count("[Hint: Answer in French.]") == 1 and "hi there\n\n[Hint: Answer in French.]" in text
    assert d["teacher_prompt_ids"] == teacher_prompt_ids(tok, turn.messages, turn.tools, "Answer in French.",
                                                         turn.prompt_ids)


def test_opd_judge_on_a_real_local_judge(tiny_server, tok):
    """The structured local hint judge on the tiny model: every vote is well-formed, the decision
    probability is a probability, the verdict agrees with the votes, and the same turn gets the
    same judgement again (seeded). Which way a random tiny model decides is not asserted."""
    from openclaw_rl.judges.hint_backend import StructuredHintBackend
    from openclaw_rl.judges.hints import HintJudge
    from openclaw_rl.opd.judge import OPDTurnJudge

    turn = _opd_judge_turn(tiny_server)
    backend = StructuredHintBackend(TINY, max_new_tokens=24)
    judge = OPDTurnJudge(HintJudge(backend, majority_vote_n=4, min_chars=1), tok)
    res = asyncio.run(judge.judge(turn))
    d = res.details
    assert d["hint_mode"] == "structured"
    assert d["hint_votes"]["invalid"] == 0 and d["hint_votes"]["accept"] + d["hint_votes"]["reject"] == 4
    assert res.trainable == d["hint_accepted"] == (d["hint_votes"]["accept"] >= 1 and bool(d["hint"]))
    assert d["branch"] == ("opd" if d["hint_accepted"] else "none")
    assert 0.0 <= backend.accept_probability([{"role": "user", "content": "x"}]) <= 1.0
    again = asyncio.run(judge.judge(turn)).details
    assert {k: again[k] for k in ("hint_votes", "hint", "hint_accepted")} == \
        {k: d[k] for k in ("hint_votes", "hint", "hint_accepted")}


def test_extractive_hint_judge_takes_the_users_correction(tiny_server, tok):
    """The deterministic extractive hint judge on a recorded correction: every vote accepts, the hint
    is the user's corrective sentence, appended once to the last user message of the turn's prompt
    (not to the next state)."""
    from openclaw_rl.judges.hint_extract import ExtractiveHintBackend
    from openclaw_rl.judges.hints import HintJudge
    from openclaw_rl.opd.judge import OPDTurnJudge

    turn = _opd_judge_turn(tiny_server)
    res = asyncio.run(OPDTurnJudge(HintJudge(ExtractiveHintBackend(), majority_vote_n=2), tok).judge(turn))
    d = res.details
    assert res.trainable and d["hint_accepted"] and d["branch"] == "opd" and d["hint_votes"]["accept"] == 2
    assert d["hint"] == "Answer in French please." and d["hint_mode"] == "extractive"
    text = tok.decode(d["teacher_prompt_ids"])
    assert text.count("[Hint: Answer in French please.]") == 1 and "hi there\n\n[Hint: Answer in French please.]" in text


# ----------------------------------------------------------------------------- flags
@pytest.mark.parametrize("argv, env, message", [
    (["--distill-topk", "4", "--advantage-estimator", "combine"], {}, "--distill-topk needs --advantage-estimator opd"),
    (["--distill-topk", "0", "--advantage-estimator", "opd"], {}, "--distill-topk must be >= 1"),
    (["--opd-adv-clip", "-1"], {}, "--opd-adv-clip must be > 0"),
    (["--opd-teacher", "student"], {}, "invalid choice"),
    (["--advantage-estimator", "combine"], {"OPENCLAW_COMBINE_W_OPD": "lots"}, "OPENCLAW_COMBINE_W_OPD must be a number"),
    (["--combine-w-rl", "-0.5"], {}, "--combine-w-rl must be >= 0"),
])
def test_bad_opd_flags_are_one_line_errors(argv, env, message, monkeypatch, capsys):
    from slime.train import main

    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert main(["--model-path", TINY, "--num-rollout", "1", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_combine_weights_from_env(monkeypatch):
    from slime.config.run_args import parse_run_args

    monkeypatch.setenv("OPENCLAW_COMBINE_W_OPD", "0.25")
    cfg = parse_run_args(["--advantage-estimator", "combine"])
    assert (cfg.combine_w_opd, cfg.combine_w_rl) == (0.25, 1.0)
    cfg = parse_run_args(["--advantage-estimator", "combine", "--combine-w-opd", "2.0", "--combine-w-rl", "0"])
    assert (cfg.combine_w_opd, cfg.combine_w_rl) == (2.0, 0.0)  # an explicit flag beats its env fallback
    assert cfg.combine_rl_baseline == "none"
    cfg = parse_run_args(["--advantage-estimator", "combine", "--combine-rl-baseline", "batch-mean"])
    assert cfg.combine_rl_baseline == "batch-mean"


def test_root_cause_line_finds_the_innermost_error():
    from slime.train import root_cause_line

    class Wrapped(Exception):
        pass

    actor_died = Wrapped("The actor died because of an error raised in its creation task, "
                         "ray::RolloutManager.__init__()\nTraceback (most recent call last):\n  File \"x.py\"\n"
                         "openclaw_rl.capture.export.SessionFormatError: data.jsonl:3: not valid JSON")
    assert root_cause_line(actor_died) == "SessionFormatError: data.jsonl:3: not valid JSON"
    assert root_cause_line(RuntimeError("weight update\n failed")) == "RuntimeError: weight update failed"
    task = Wrapped("outer")
    task.cause = KeyError("missing")
    assert root_cause_line(task) == "KeyError: 'missing'"


def test_slime_loss_batch_carries_teacher_log_probs():
    from slime.plugins.loss import _response_index, slime_batch
    from slime.algorithms.losses import LossInputs

    z = torch.zeros(2, 4)
    resp = torch.tensor([[False, True, True, False], [False, False, True, True]])
    teacher = torch.tensor([[0.0, -1.0, -2.0, 0.0], [0.0, 0.0, -3.0, -4.0]])
    inputs = LossInputs(logprobs_B_T=z, old_logprobs_B_T=z, advantages_B_T=z, loss_mask_B_T=resp.float(),
                        global_num_tokens=4.0, response_mask_B_T=resp, teacher_logprobs_B_T=teacher)
    batch = slime_batch(inputs, _response_index(inputs))
    assert [t.tolist() for t in batch["teacher_log_probs"]] == [[-1.0, -2.0], [-3.0, -4.0]]
