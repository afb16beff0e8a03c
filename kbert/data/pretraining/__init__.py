"""BERT pretraining's data: raw text to sentence pairs, masked-LM masking, the tf.data pipeline."""
