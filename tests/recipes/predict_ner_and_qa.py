"""Runs the NER and QA predictions (`kbert.recipes.ner`, `kbert.recipes.qa`) on run folders; writes
them as JSON (cross-backend tests).

    python tests/recipes/predict_ner_and_qa.py NER_RUN QA_RUN OUT.json
"""

import json
import pathlib
import sys

NER_TEXTS = ["A man plays. Someone sleeps and the man plays", "nobody"]
QA_CONTEXT = "the man plays a film . someone sleeps . nobody is fine and the film is good"
QA_QUESTIONS = ["who plays ?", "who sleeps ?"]


def main(ner_run, qa_run, out):
    import keras

    from kbert.recipes import ner as ner_recipe, qa as qa_recipe

    results = {"backend": keras.config.backend(),
               "ner": ner_recipe.predict(ner_run, NER_TEXTS),
               "qa": qa_recipe.predict(qa_run, QA_CONTEXT, QA_QUESTIONS)}
    pathlib.Path(out).write_text(json.dumps(results))


if __name__ == "__main__":
    main(*sys.argv[1:])
