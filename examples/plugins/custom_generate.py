"""A generate hook in slime's convention (``--custom-generate-function-path``), used by the
prompt-dataset rollout (``--prompt-data``).

``async generate(args, sample, sampling_params) -> Sample`` fills in the response. This one adds
a system prompt and delegates to the default generate, which goes through the intercept server
and reads the turn back token-exactly from the trajectory store.
"""

from openclaw_rl.rollout.generate import generate as default_generate

SYSTEM = "Answer in one short sentence."


async def generate(args, sample, sampling_params):
    """Prepend a system message to the prompt, then generate through the server."""
    prompt = sample.prompt
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    sample.prompt = [{"role": "system", "content": SYSTEM}] + messages
    sample.metadata["system_prompt"] = SYSTEM
    return await default_generate(args, sample, sampling_params)
