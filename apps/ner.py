"""Named-entity recognition (CoNLL-2003 style, `token TAG` per line) with BertTokenClassifier, any backend.

    python apps/ner.py train --data ../shared/data/conll2003/train.txt \\
        --valid ../shared/data/conll2003/valid.txt --out saved_models/conll
    python apps/ner.py evaluate --model saved_models/conll --data ../shared/data/conll2003/valid.txt
    python apps/ner.py predict --model saved_models/conll "Angela Merkel visited Paris."
    echo "Angela Merkel visited Paris." | python apps/ner.py predict --model saved_models/conll --json

Tags may be BIO or IOB1 (converted to BIO on reading). Sentences longer than --max-length
tokens are cut into windows at word boundaries, which do not overlap, so every word gets a
prediction. Scores are entity-level precision / recall / F1 as conlleval counts them (micro
and per type).
"""

from kbert.training.ner_task_cli import main

if __name__ == "__main__":
    main(description=__doc__)
