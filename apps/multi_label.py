"""Multi-label classification (`sentence<TAB>label1,label2`: any number of classes per text) with BertClassifier.

    python apps/multi_label.py train --data topics.tsv --out saved_models/topics
    python apps/multi_label.py evaluate --model saved_models/topics --data topics_dev.tsv
    python apps/multi_label.py predict --model saved_models/topics "the minister watched the final"

A label cell names the text's classes, comma-separated (an empty cell: none of them); the classes are the sorted
names the training file uses, or --labels. The model has a sigmoid per class; predict gives the classes at or above
its threshold (0.5), evaluate per-class precision, recall and F1, micro and macro F1.
"""

import functools

from cli_errors import run
from sentence_cli import main

if __name__ == "__main__":
    run(functools.partial(main, "multi_label", description=__doc__))
