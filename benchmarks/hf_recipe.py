"""BERT's fine-tuning recipe in a plain torch loop: the Hugging Face side of the benchmarks.

AdamW (weight decay 0.01, none on biases and LayerNorm, eps 1e-6), linear warmup over
`warmup_ratio` of the steps then linear decay, gradient clipping at 1.0; what
`kbert.optimizers.bert_adamw` does on the kbert side.

    trainer = HfTrainer(model, learning_rate=5e-5, total_steps=100)
    loss = trainer.step(input_ids=..., attention_mask=..., token_type_ids=..., labels=...)

`HfTokenizer` puts Hugging Face's fast tokenizer behind kbert's call signature, so kbert's
batch and window builders feed both sides the same rows.
"""

import torch
import transformers


def bert_adamw(named_parameters, learning_rate, warmup_steps, total_steps, weight_decay=0.01):
    """`(optimizer, schedule)`: AdamW (eps 1e-6, `weight_decay` off biases and layer norms, ALBERT's
    `full_layer_layer_norm` too) and `learning_rate` warmed up over `warmup_steps`, then decayed linearly to 0 at
    `total_steps` (0 at step 0, as kbert's `WarmupLinearDecay`); clip the gradients at 1.0 before each step."""
    groups = {weight_decay: [], 0.0: []}
    for name, parameter in named_parameters:
        groups[0.0 if "bias" in name or "norm" in name.lower() else weight_decay].append(parameter)
    optimizer = torch.optim.AdamW([{"params": group, "weight_decay": decay} for decay, group in groups.items()],
                                  lr=learning_rate, eps=1e-6)
    return optimizer, transformers.get_linear_schedule_with_warmup(optimizer, warmup_steps, total_steps)


class HfTrainer:
    """One optimizer step at a time for a `transformers` model that returns `.loss`."""

    def __init__(self, model, learning_rate, total_steps, warmup_ratio=0.1, weight_decay=0.01, bfloat16=False):
        self.model = model
        self.optimizer, self.schedule = bert_adamw(model.named_parameters(), learning_rate,
                                                   int(warmup_ratio * total_steps), total_steps, weight_decay)
        self.bfloat16 = bfloat16

    def step(self, **inputs):
        """Forward, backward, clip, update; returns the loss (a float)."""
        device = next(self.model.parameters()).device.type  # "cpu", or "cuda" on a GPU
        with torch.autocast(device, dtype=torch.bfloat16, enabled=self.bfloat16):
            loss = self.model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.schedule.step()
        self.optimizer.zero_grad()
        return float(loss.detach())


class HfTokenizer:
    """Hugging Face's fast BERT tokenizer behind `kbert.text.BertTokenizer`'s call and output keys."""

    def __init__(self, folder):
        self.tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
        self.pad_token_id = self.tokenizer.pad_token_id
        self.cls_token_id = self.tokenizer.cls_token_id
        self.sep_token_id = self.tokenizer.sep_token_id

    def __call__(self, texts, pairs=None, max_length=128, padding="longest", return_offsets=False):
        out = self.tokenizer(texts, pairs, max_length=max_length, truncation=True, padding=padding,
                             return_offsets_mapping=return_offsets, return_tensors="np")
        batch = {"token_ids": out["input_ids"].astype("int32"), "segment_ids": out["token_type_ids"].astype("int32"),
                 "padding_mask": out["attention_mask"].astype("int32")}
        if return_offsets:
            batch["offsets"] = out["offset_mapping"].astype("int32")
        return batch
