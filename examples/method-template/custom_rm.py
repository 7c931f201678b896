"""A reward model in the simple reward convention (``--custom-rm-path``).

``get_reward_model(config)`` is called once per judge worker at start-up; the object it returns
scores each turn with ``score(prompt, response, next_state) -> float``:

* ``prompt``: the conversation as the policy saw it (chat template applied);
* ``response``: the text the policy sampled;
* ``next_state``: what came next, the user's reply or the tool's result ("" if nothing did; the
  label for prompt-dataset rollouts).

Here a ``transformers`` sequence classifier (``config["prm_model_path"]``, i.e. ``--prm-model-path``
/ ``PRM_MODEL_PATH``, default the policy's model) gives the probability of its positive class
(label 1) as the reward. See docs/plugins.md.
"""

import warnings

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer


# bfloat16 on a GPU; float32 on CPU, where bfloat16 matmuls are slow and their rounding depends on
# the thread count (two processes would score the same text differently)
_DTYPE = torch.bfloat16 if torch.cuda.is_available() else torch.float32


class CustomPRM:
    """A sequence classifier whose positive-class probability is the reward (in [0, 1])."""

    def __init__(self, model_path: str):
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.tokenizer.truncation_side = "left"  # long conversations keep their end: response and outcome
        self.model, info = AutoModelForSequenceClassification.from_pretrained(
            model_path, dtype=_DTYPE, output_loading_info=True)
        self.model.eval()
        if any(k.startswith(("score", "classifier")) for k in info["missing_keys"]):
            warnings.warn(f"{model_path} has no trained classification head (a new one was initialised at "
                          "random, so rewards are noise): set PRM_MODEL_PATH to a sequence-classification "
                          "checkpoint")

    def score(self, prompt: str, response: str, next_state: str) -> float:
        """Score one turn from its prompt, its response and the feedback that followed."""
        combined = f"Prompt: {prompt}\nResponse: {response}\nOutcome: {next_state}"
        inputs = self.tokenizer(combined, return_tensors="pt", truncation=True, max_length=2048)

        with torch.no_grad():
            logits = self.model(**inputs).logits

        # binary reward: probability of the positive class
        return torch.softmax(logits.float(), dim=-1)[0, 1].item()


def get_reward_model(config):
    """Build the reward model from the run's settings (``config["prm_model_path"]``)."""
    return CustomPRM(config["prm_model_path"])
