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


class HfTrainer:
    """One optimizer step at a time for a `transformers` model that returns `.loss`."""

    def __init__(self, model, learning_rate, total_steps, warmup_ratio=0.1, weight_decay=0.01, bfloat16=False):
        no_decay = [p for n, p in model.named_parameters() if "bias" in n or "LayerNorm" in n]
        no_decay_ids = {id(p) for p in no_decay}
        decay = [p for p in model.parameters() if id(p) not in no_decay_ids]
        self.model = model
        self.optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                            {"params": no_decay, "weight_decay": 0.0}], lr=learning_rate, eps=1e-6)
        self.schedule = transformers.get_linear_schedule_with_warmup(
            self.optimizer, int(warmup_ratio * total_steps), total_steps)
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
