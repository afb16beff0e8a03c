"""Natural language inference (SNLI style, `sentence1<TAB>sentence2<TAB>label`), any backend.

The premise and hypothesis are packed as `[CLS] premise [SEP] hypothesis [SEP]`.

    python apps/nli.py train --data ../shared/data/snli/train.tsv --valid ../shared/data/snli/dev.tsv --out saved_models/snli
    python apps/nli.py evaluate --model saved_models/snli --data ../shared/data/snli/dev.tsv
    python apps/nli.py predict --model saved_models/snli --premise "A man plays." --hypothesis "Nobody plays."
    printf 'A man plays.\\tSomeone plays.\\n' | python apps/nli.py predict --model saved_models/snli --json
"""

import functools

from cli_errors import run
from sentence_cli import main

if __name__ == "__main__":
    run(functools.partial(main, "nli", description=__doc__))
