"""How a model reads a retrieval prompt and answers: prompt formats and tokenizers
(``prompts``, ``tokenizers``), greedy decoding and teacher forcing (``generate``), one
prefill shared by several questions (``shared``) and the answer rules (``answers``)."""
