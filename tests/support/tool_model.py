"""A tiny Qwen3 model *trained* (real supervised steps, minutes on CPU) to use tools.

A random tiny model never emits a well-formed ``<tool_call>``, so the tool round-trip tests
(openai SDK, real OpenClaw agent) use this model instead: ``builtin:tiny-qwen3`` fine-tuned on
conversations rendered by its own chat template, where the decision is structural, which a
2-layer model learns reliably even in OpenClaw's 8k-token prompt:

* tools offered and no tool result yet: a ``read`` tool call on ``hello.txt``;
* a tool result as the last real message: ``Done.``;
* no tools offered: ``Hello!``.

Contexts vary: short system prompts, the long OpenClaw prompt of the captured tool session (its
run-specific paths, model name and ids varied), and real ``openclaw agent exec`` requests with and
without tools (``compat.supportsTools: false``), captured by our server with paths rewritten to
the agent test's fixed work dir. Built once per cache and recipe
(``$OPENCLAW_RL_CACHE/models/tiny-qwen3-tools-<recipe key>``), under a file lock, and checked right
after the build (:mod:`tests.support.tool_model_check`): a model that would not produce the
expected replies with a safe margin is trained further or fails the build loudly, naming why.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from openclaw_rl.models import cache_root

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "openclaw-tool-session.jsonl"
#: a real `openclaw agent exec` request (paths rewritten to the agent test's fixed work dir)
EXEC_FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "openclaw-exec-plain.json"
EXEC_WORKDIR = "/tmp/openclaw-rl-oc-test"
#: the same with ``compat.supportsTools: false`` (no tools sent)
NOTOOLS_FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "openclaw-exec-notools.json"
TOOL_REPLY = '<tool_call>\n{"name": "read", "arguments": {"path": "hello.txt"}}\n</tool_call>'
PLAIN_REPLY = "Hello!"
AFTER_TOOL_REPLY = "Done."
SHORT_TOOLS = [{"type": "function", "function": {
    "name": "read", "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
TOOL_ASKS = ("USE_TOOL please read hello.txt", "USE_TOOL please read the file", "USE_TOOL read hello.txt")
PLAIN_ASKS = ("hi there", "hi", "Hello there", "what time is it", "tell me a joke", "please help me")


def _openclaw_pkg() -> str:
    """Where ``tests/openclaw_agent/install.sh`` puts the openclaw package (its paths appear in
    OpenClaw's prompt; the fixtures hold ``<OPENCLAW_PKG>`` instead)."""
    return str(cache_root() / "openclaw-node" / "openclaw" / "node_modules" / "openclaw")


def _load_exec_fixture(path: Path) -> dict:
    return json.loads(path.read_text().replace("<OPENCLAW_PKG>", _openclaw_pkg()))


def _vary_openclaw(system: str, runtime: str, rng: random.Random) -> tuple[str, str]:
    """Vary what differs between OpenClaw runs: install and workspace paths, skill description
    truncation, the model identity, and the runtime line's host / os / model fields."""
    root = rng.choice(("/usr/lib/node_modules/openclaw",
                       _openclaw_pkg(),
                       f"/opt/n{rng.randint(0, 99)}/node_modules/openclaw"))
    work = rng.choice(("/home/user/.openclaw", f"/tmp/pytest-of-root/pytest-{rng.randint(1, 999)}/"
                       f"test_openclaw_plain_turn_and_t0/oc/{rng.choice(('plain', 'tool'))}/openclaw/state"))
    model = rng.choice(("stub/stub-model", "openclawrl/tiny-tools", f"p{rng.randint(0, 9)}/m{rng.randint(0, 99)}"))
    system = (system.replace("/usr/lib/node_modules/openclaw", root)
              .replace("/home/user/.openclaw/workspace", f"/tmp/w{rng.randint(0, 999)}/oc/workspace")
              .replace("~/.openclaw", work).replace("stub/stub-model", model))
    if rng.random() < 0.5:  # newer builds clip skill descriptions
        system = re.sub(r"<description>(.{66}).+?</description>", r"<description>\1...</description>", system)
    sid = f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-a{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"
    runtime = (runtime.replace("f5aba073-5020-48b0-b26b-98e6e189a1ad", sid).replace("stub/stub-model", model)
               .replace("host=workstation", f"host={rng.choice(('vm', 'workstation', 'box'))}")
               .replace("os=Linux (x64)", rng.choice(("os=Linux (x64)", "os=Linux 6.18.44-fc-v769 (x64)"))))
    return system, runtime


def _exec_template(rng: random.Random, ask: str) -> tuple[dict, dict, dict, list]:
    """(system, user, carrier, tools) from the real exec request, with its run-specific parts
    (state dir, time, session id) varied and ``ask`` as the user's message."""
    fx = _load_exec_fixture(EXEC_FIXTURE)
    system, user, carrier = (dict(m) for m in fx["messages"])
    state = rng.choice(("plain", "tool"))
    system["content"] = system["content"].replace(f"{EXEC_WORKDIR}/plain/", f"{EXEC_WORKDIR}/{state}/")
    sid = f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-a{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"
    text = re.sub(r"\[Mon 2026-11-30 \d\d:\d\d UTC\] hi there",
                  f"[Mon 2026-11-30 {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} UTC] {ask}", user["content"])
    user["content"] = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", sid, text)
    return system, user, carrier, fx["tools"]


def _tool_round(rng: random.Random) -> tuple[dict, dict]:
    """The assistant's ``read`` call on hello.txt and the tool's result message."""
    call = {"role": "assistant", "content": None, "tool_calls": [{
        "id": f"call{rng.randint(0, 10**6)}", "type": "function",
        "function": {"name": "read", "arguments": '{"path":"hello.txt"}'}}]}
    result = {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"],
              "content": f"secret-value-{rng.randint(0, 99)}\n"}
    return call, result


def _conversations(rng: random.Random, n: int) -> list[tuple[list[dict], list[dict] | None, str]]:
    """``n`` (messages, tools, reply) training conversations; every 4th uses an OpenClaw prompt."""
    fixture = [json.loads(line)["body"] for line in FIXTURE.read_text().splitlines()]
    oc_system, oc_tools, oc_ctx = fixture[0]["messages"][0], fixture[0]["tools"], fixture[0]["messages"][-1]
    oc_ctx = {"role": "user", "content": "".join(p["text"] for p in oc_ctx["content"])}
    oc_user = fixture[0]["messages"][1]["content"]  # "[date] USE_TOOL please read hello.txt\n\nRuntime: ..."
    oc_runtime = oc_user[oc_user.index("\n\nRuntime:"):]
    notools = _load_exec_fixture(NOTOOLS_FIXTURE)["messages"]
    out = []
    for i in range(n):
        long = i % 4 == 0
        kind = ("plain", "call", "after")[i % 3]  # no tools / tools offered / tool result back
        ask = rng.choice(TOOL_ASKS + PLAIN_ASKS)
        stamp = f"[Mon 2026-11-30 {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} UTC] "
        if long and kind == "plain":  # OpenClaw with compat.supportsTools=false
            system, user = (dict(m) for m in notools)
            user["content"] = re.sub(r"\[Mon 2026-11-30 \d\d:\d\d UTC\] hi there", stamp + ask, user["content"])
            out.append(([system, user], None, PLAIN_REPLY))
            continue
        if long and (i // 4) % 2 == 0:  # the real exec request
            system, user, carrier, tools = _exec_template(rng, ask)
            tail = [carrier]
        elif long:  # the captured tool session, with run-specific parts varied
            system = dict(oc_system)
            system["content"], runtime = _vary_openclaw(system["content"], oc_runtime, rng)
            user = {"role": "user", "content": stamp + ask + runtime}
            tools, tail = oc_tools, [oc_ctx]
        else:
            system = {"role": "system", "content": rng.choice(("You are helpful.", "You are a helpful assistant.",
                                                                 "Be brief."))}
            user = {"role": "user", "content": (stamp if rng.random() < 0.5 else "") + ask}
            tools, tail = SHORT_TOOLS, []
        if kind == "plain":
            out.append(([system, user], None, PLAIN_REPLY))
        elif kind == "call":
            out.append(([system, user] + tail, tools, TOOL_REPLY))
        else:
            call, result = _tool_round(rng)
            out.append(([system, user, call, result] + tail, tools, AFTER_TOOL_REPLY))
    return out


def build_tool_model(target: Path, steps: int = 360, seed: int = 0, repair_rounds: int = 3) -> Path:
    """Fine-tune ``builtin:tiny-qwen3`` into ``target`` (a Hugging Face folder) and return it.

    Training runs with a fixed torch thread count (2) so the arithmetic is the same on any
    machine with the same CPU kernels. The result is then checked
    (:mod:`tests.support.tool_model_check`); a model that misses a margin gets up to
    ``repair_rounds`` more rounds of the second phase with fresh wordings.

    Raises:
        ToolModelCheckError: the model still fails the check after the repair rounds (the
            message names each failing case and its margin).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openclaw_rl.models import resolve_model_path
    from tests.support.tool_model_check import MIN_MARGIN, ToolModelCheckError, failing_cases

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        base = resolve_model_path("builtin:tiny-qwen3")
        tok = AutoTokenizer.from_pretrained(base)
        model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
        rng = random.Random(seed)
        torch.manual_seed(seed)
        data = []
        for conv in _conversations(rng, 64):
            ids, p_len = _encode(tok, conv)
            data.append((ids, p_len, 3.0 if p_len > 4000 else 1.0))  # long prompts are rarer: weigh them up
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
        model.train()
        for step in range(steps):  # 4 conversations per step, clipped: stable where 1 per step is not
            _sft_step(model, opt, [data[(4 * step + k) % len(data)] for k in range(4)])
        _long_phase(model, tok)
        model.eval()
        failing = failing_cases(model, tok)
        for round_ in range(repair_rounds):
            if not failing:
                break
            print(f"tool model: round {round_ + 1} of repair training; below margin {MIN_MARGIN}: {failing}",
                  flush=True)
            _long_phase(model, tok, steps=40, seed=100 + round_)
            model.eval()
            failing = failing_cases(model, tok)
        if failing:
            raise ToolModelCheckError(
                "the trained tool model does not reliably produce the expected replies (case: smallest "
                f"logit margin, needed {MIN_MARGIN}): {failing}")
    finally:
        torch.set_num_threads(threads)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)
    tok.save_pretrained(target)
    return target


def _encode(tok, conv):
    """``(ids [1, P + R], P)``: the rendered prompt and the reply ending in ``<|im_end|>``."""
    import torch
    msgs, tools, reply = conv
    prompt = tok.apply_chat_template(msgs, tools=tools, add_generation_prompt=True, tokenize=False)
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    r_ids = tok(reply, add_special_tokens=False)["input_ids"] + [tok.convert_tokens_to_ids("<|im_end|>")]
    return torch.tensor([p_ids + r_ids]), len(p_ids)


def _sft_step(model, opt, batch) -> None:
    """One clipped AdamW step on ``[(ids [1, L], prompt_len, weight)]``: response cross-entropy,
    with the first tokens (tool call or not, and its opening) weighted up."""
    import torch

    opt.zero_grad()
    for ids, p_len, weight in batch:
        hidden = model.model(input_ids=ids).last_hidden_state[:, p_len - 1:-1]
        token_loss = torch.nn.functional.cross_entropy(model.lm_head(hidden)[0], ids[0, p_len:], reduction="none")
        (weight * (token_loss.mean() + 2.0 * token_loss[:4].sum()) / len(batch)).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


def _long_phase(model, tok, steps: int = 80, seed: int = 7) -> None:
    """Second phase: the real OpenClaw exec prompt with many user wordings (3 per step, plus one
    short conversation so nothing is forgotten). Without it the model picks the right first token
    in OpenClaw's 8k-token tool prompt but garbles the call for wordings it has not seen."""
    import torch

    rng = random.Random(seed)
    torch.manual_seed(seed)
    shorts = [c for c in _conversations(rng, 96) if len(c[0][0]["content"]) <= 5000]
    words = "please could you read the file hello txt now show me what is in it open look at check contents quickly tell".split()
    longs = []
    for i in range(48):
        ask = " ".join(rng.choice(words) for _ in range(rng.randint(1, 7)))
        system, user, carrier, tools = _exec_template(rng, ask)
        if i % 2 == 0:
            longs.append(([system, user, carrier], tools, TOOL_REPLY))
        else:
            call, result = _tool_round(rng)
            longs.append(([system, user, call, result, carrier], tools, AFTER_TOOL_REPLY))
    long_data = [(*_encode(tok, c), 1.0) for c in longs]
    short_data = [(*_encode(tok, c), 1.0) for c in shorts]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    model.train()
    for step in range(steps):
        batch = [long_data[(3 * step + k) % len(long_data)] for k in range(3)] + [short_data[step % len(short_data)]]
        _sft_step(model, opt, batch)


def recipe_key() -> str:
    """A hash of everything the tool model is built from: this recipe and its check, the training
    fixtures, the base model's config and tokenizer, and the torch / transformers versions. The
    cache is keyed on it, so a changed recipe or library builds a new model."""
    import hashlib

    import torch
    import transformers

    from openclaw_rl.models import resolve_model_path

    here = Path(__file__).resolve().parent
    base = resolve_model_path("builtin:tiny-qwen3")
    h = hashlib.sha256()
    for path in (here / "tool_model.py", here / "tool_model_check.py", FIXTURE, EXEC_FIXTURE, NOTOOLS_FIXTURE,
                 base / "config.json", base / "tokenizer_config.json", base / "tokenizer.json"):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    h.update(f"torch={torch.__version__} transformers={transformers.__version__}".encode())
    return h.hexdigest()[:12]


def tool_model_path() -> Path:
    """The cached tool-using tiny model for the current :func:`recipe_key` (built and checked on
    first use, file-locked; models of older recipes are removed)."""
    import shutil

    from openclaw_rl.models import _atomic_build, _file_lock, cache_dir

    target = cache_dir() / f"tiny-qwen3-tools-{recipe_key()}"
    with _file_lock(cache_dir() / ".tiny-qwen3-tools.lock"):
        if not (target / ".complete").exists():
            _atomic_build(target, build_tool_model)
            for old in cache_dir().glob("tiny-qwen3-tools*"):
                if old != target and old.is_dir() and not old.name.startswith(target.name + "."):
                    shutil.rmtree(old, ignore_errors=True)
    return target
