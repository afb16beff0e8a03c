"""Sentence-pair similarity scores (STS-B, `sentence1<TAB>sentence2<TAB>score`): BertClassifier
with one output trained by mean squared error; evaluated by Pearson and Spearman correlation.

    python apps/similarity.py train --data ../shared/data/stsb/train.tsv --out saved_models/stsb
    python apps/similarity.py evaluate --model saved_models/stsb --data dev.tsv
    python apps/similarity.py predict --model saved_models/stsb --premise "A cat sits." --hypothesis "A cat is sitting."
"""

import functools

from cli_errors import run
from sentence_cli import main

if __name__ == "__main__":
    run(functools.partial(main, "similarity", description=__doc__))
