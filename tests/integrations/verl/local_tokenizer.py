"""A small byte-level BPE tokenizer with a ChatML chat template (the format of the Qwen2.5 Coder
family the recipe trains), built here from a few texts so the tests need no download. Byte-level:
every text encodes and decodes back exactly, which the reward manager relies on (it decodes the
response tokens before compute_score sees them)."""

from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def build_tokenizer(directory: Path, corpus: list[str]) -> PreTrainedTokenizerFast:
    """Trains on `corpus`, saves to `directory` and loads it back through AutoTokenizer (as verl's
    hf_tokenizer does from a model path)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1000, special_tokens=SPECIAL_TOKENS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(corpus, trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=CHATML_TEMPLATE
    )
    wrapped.save_pretrained(directory)
    return AutoTokenizer.from_pretrained(directory)
