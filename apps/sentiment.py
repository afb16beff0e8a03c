"""Sentiment classification (SST-2 style, `sentence<TAB>label`) with BertClassifier, any backend.

    python apps/sentiment.py train --data ../shared/data/sst2/train.tsv --out saved_models/sst2
    python apps/sentiment.py evaluate --model saved_models/sst2 --data dev.tsv
    python apps/sentiment.py predict --model saved_models/sst2 "a gripping film" "dull and long"
    echo "a gripping film" | python apps/sentiment.py predict --model saved_models/sst2 --json
"""

import functools

from cli_errors import run
from sentence_cli import main

if __name__ == "__main__":
    run(functools.partial(main, "sentiment", description=__doc__))
