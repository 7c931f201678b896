"""Batching defaults of the transformers engine, importable without torch (the server's CLI)."""

#: most requests decoded together in one forward pass (``--max-batch-size``)
DEFAULT_MAX_BATCH_SIZE = 16
#: most (padded) prompt tokens per prefill forward pass (``--prefill-chunk-tokens``)
DEFAULT_PREFILL_CHUNK_TOKENS = 256
