"""Extractive question answering (SQuAD v1.1 JSON) with BertQuestionAnswerer, any backend.

    python apps/qa.py train --data ../shared/data/squad/train-v1.1.json --out saved_models/squad
    python apps/qa.py evaluate --model saved_models/squad --data dev-v1.1.json
    python apps/qa.py predict --model saved_models/squad --context article.txt --question "Who ...?"

Contexts longer than a window are read through overlapping windows (--max-length 384,
--doc-stride 128, BERT's recipe); answers are decoded over all windows of a question and
sliced from the original context. Scores are the official v1.1 exact match and F1 (%).
"""

from kbert.training.qa_task_cli import main

if __name__ == "__main__":
    main(description=__doc__)
