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
    """One optimizer step at a time for a `transformers` model that returns `.loss`.

    `compute_dtype`: "float32"; "bfloat16" (torch.autocast); or "float16" (torch.autocast, the loss scaled by
    `torch.amp.GradScaler`, an overflowing step skipped), float32 weights in each."""

    def __init__(self, model, learning_rate, total_steps, warmup_ratio=0.1, weight_decay=0.01,
                 compute_dtype="float32"):
        self.model = model
        self.optimizer, self.schedule = bert_adamw(model.named_parameters(), learning_rate,
                                                   int(warmup_ratio * total_steps), total_steps, weight_decay)
        self.autocast = {"float32": None, "bfloat16": torch.bfloat16, "float16": torch.float16}[compute_dtype]
        self.device = next(model.parameters()).device.type  # "cpu", or "cuda" on a GPU
        self.scaler = torch.amp.GradScaler(self.device) if compute_dtype == "float16" else None

    def step(self, **inputs):
        """Forward, backward, clip, update; returns the loss (a float)."""
        with torch.autocast(self.device, dtype=self.autocast, enabled=self.autocast is not None):
            loss = self.model(**inputs).loss
        if self.scaler is None:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
        else:
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.scaler.step(self.optimizer)
            self.scaler.update()
        self.schedule.step()
        self.optimizer.zero_grad()
        return float(loss.detach())


def hf_inputs(inputs, device="cpu"):
    """kbert's batch dict (`token_ids`, `segment_ids`, `padding_mask`) as Hugging Face's BERT takes it: int64
    tensors on `device`."""
    names = {"token_ids": "input_ids", "segment_ids": "token_type_ids", "padding_mask": "attention_mask"}
    return {names[key]: torch.as_tensor(value, device=device).long() for key, value in inputs.items() if key in names}


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
