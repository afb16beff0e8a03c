"""Runs the NER or QA predictions (`kbert.recipes.ner`, `kbert.recipes.qa`) on a run folder; writes
them as JSON (cross-backend tests).

    python tests/recipes/predict_ner_and_qa.py ner|qa RUN OUT.json
"""

import json
import pathlib
import sys

NER_TEXTS = ["A man plays. Someone sleeps and the man plays", "nobody"]
QA_CONTEXT = "the man plays a film . someone sleeps . nobody is fine and the film is good"
QA_QUESTIONS = ["who plays ?", "who sleeps ?"]


def main(recipe, run, out):
    import keras

    from kbert.recipes import ner as ner_recipe, qa as qa_recipe

    predictions = (ner_recipe.predict(run, NER_TEXTS) if recipe == "ner"
                   else qa_recipe.predict(run, QA_CONTEXT, QA_QUESTIONS))
    pathlib.Path(out).write_text(json.dumps({"backend": keras.config.backend(), recipe: predictions}))


if __name__ == "__main__":
    main(*sys.argv[1:])
